"""Time from launching `escalate` to its first frame on a terminal, in fresh processes (shared
by bench_console.py and bench_store.py).

The real command runs in a pseudo-terminal (Textual's real driver, the frame written as ANSI),
and the clock stops when the main screen's text arrives. Textual's own floor on this machine (a
one-label app, launched the same way) is measured alongside: these shared machines vary by a
factor of two from one minute to the next, and the difference is what the console adds.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Callable

SIZE = (40, 120)  # rows, columns
MARKER = b"Workflows"  # the main screen's text (a border title), also the floor app's label
TIMEOUT = 30.0

FLOOR_APP = r"""
from textual.app import App
from textual.widgets import Static
class Floor(App):
    def compose(self):
        yield Static("Workflows")
    def on_key(self, _):
        self.exit()
Floor().run()
"""

# The console with its app headless: did the first frame wait for ADK?
ADK_CHILD = r"""
import sys
import engine.cli.console_cmd as cmd
from engine.cli.parser import build_parser
make_app = cmd._app
def headless_app(session, args):
    app = make_app(session, args)
    original = app._display
    def display(screen, renderable):
        original(screen, renderable)
        if renderable is not None and screen is app.main and not getattr(app, "_seen", False):
            app._seen = True
            print("google.genai.types" in sys.modules or "google.adk.agents" in sys.modules, flush=True)
            app.exit(0)
    app._display = display
    run = app.run
    app.run = lambda: run(headless=True)
    return app
cmd._app = headless_app
sys.exit(cmd.main(build_parser().parse_args(sys.argv[1:])))
"""


def _env() -> dict[str, str]:
    # These machines set PYTHONDONTWRITEBYTECODE: every start would compile the project again,
    # which a user's Python does once. TERM: a terminal like a user's.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["TERM"] = "xterm-256color"
    return env


def _on_terminal(argv: list[str], marker: bytes | None = None, quit_keys: bytes = b"q",
                 seen_by: Callable[[int], None] | None = None) -> float:
    """Seconds from the launch of `argv` on a new pseudo-terminal to MARKER (or `marker`) on its
    screen; then `quit_keys` are typed. `seen_by(pid)`: called as the marker arrives, and again
    as the program ends (before it is reaped: its CPU is still there to read)."""
    marker = marker or MARKER
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes the program, the terminal its stdin/stdout/stderr
        os.execve(argv[0], argv, _env())
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", *SIZE, 0, 0))
    seen, elapsed = b"", None
    try:
        while elapsed is None and time.perf_counter() - t0 < TIMEOUT:
            if select.select([fd], [], [], 0.5)[0]:
                seen = seen[-len(marker):] + os.read(fd, 65536)
                if marker in seen:
                    elapsed = time.perf_counter() - t0
                    if seen_by is not None:
                        seen_by(pid)
                    os.write(fd, quit_keys)  # the console's quit key; any key for the floor app
        deadline = time.perf_counter() + 10  # let it close the terminal mode by itself
        while time.perf_counter() < deadline and select.select([fd], [], [], 0.5)[0]:
            if not os.read(fd, 65536):
                break
    except OSError:  # the terminal closed: the program ended
        pass
    finally:
        if seen_by is not None and elapsed is not None:
            seen_by(pid)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)
    if elapsed is None:
        raise SystemExit(f"no first frame within {TIMEOUT:.0f} s: {' '.join(argv)}")
    return elapsed


def _command(args: list[str]) -> list[str]:
    script = Path(sys.executable).with_name("escalate")  # the installed command, as a user runs it
    if script.is_file():
        return [str(script), *args]
    return [sys.executable, "-c", "import sys; from engine.cli.main import main; sys.exit(main())", *args]


def launches(args: list[str], runs: int) -> list[float]:
    """Seconds to the first frame of `escalate ARGS` for each of `runs` launches, after one
    launch not counted that leaves the compiled modules behind, as a user's first start does."""
    return [_on_terminal(_command(args)) for _ in range(runs + 1)][1:]


def with_floor(args: list[str], runs: int) -> tuple[list[float], list[float]]:
    """`launches`, each followed by one of a Textual app showing one label (what any Textual
    app costs here, in the same minute): (console seconds, floor seconds)."""
    floor = [sys.executable, "-c", FLOOR_APP]
    pairs = [(_on_terminal(_command(args)), _on_terminal(floor)) for _ in range(runs + 1)][1:]
    return [console for console, _ in pairs], [textual for _, textual in pairs]


def adk_before_first_frame(args: list[str]) -> bool:
    out = subprocess.run([sys.executable, "-c", ADK_CHILD, *args], capture_output=True, text=True,
                         timeout=120, env=_env())
    if out.returncode != 0:
        raise SystemExit(f"the console failed: {out.stderr.strip()}")
    return out.stdout.split()[0] == "True"
