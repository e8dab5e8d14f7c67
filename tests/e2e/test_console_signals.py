"""End to end: SIGTERM or SIGHUP to the console in a real pseudo-terminal.

The console must end like `escalate run` does (its runs cancelled, the commands they started
killed with their process groups, exit 128 + the signal) and hand the terminal back as it found
it: out of the alternate screen, cursor shown, line discipline (echo, canonical mode) restored.
"""

from __future__ import annotations

import os
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest

from tests.e2e.pty_console import PtyConsole

pytestmark = pytest.mark.slow

ALT_SCREEN_ON, ALT_SCREEN_OFF = b"\x1b[?1049h", b"\x1b[?1049l"
CURSOR_HIDDEN, CURSOR_SHOWN = b"\x1b[?25l", b"\x1b[?25h"


def _pids_running(pattern: str) -> list[int]:
    """Processes whose whole command line matches `pattern` (a regex, as pgrep -f reads it)."""
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _pending_signals(pid: int) -> int:
    """The process's signals sent but not yet delivered (/proc's ShdPnd and SigPnd masks)."""
    masks = [line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
             if line.startswith(("ShdPnd:", "SigPnd:"))]
    return sum(int(mask, 16) for mask in masks)


def _wait(predicate, timeout: float, what: str) -> None:  # noqa: ANN001
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("signals", [(signal.SIGTERM,), (signal.SIGHUP,), (signal.SIGTERM, signal.SIGHUP, signal.SIGTERM)],
                         ids=["SIGTERM", "SIGHUP", "SIGTERM-then-more"])
def test_a_signal_cancels_runs_kills_their_commands_and_restores_the_terminal(tmp_path: Path, signals: tuple[int, ...]) -> None:
    """A second signal during the quit changes nothing: the first one's exit code."""
    signum = signals[0]
    marker = f"sleep 30.{4000 + 100 * len(signals) + signum}"  # unique: found by pgrep, never confused with another test's
    (tmp_path / "w.sr").write_text('tool sh = builtin streetrace.cli\nprompt p: """x"""\nagent a:\n    instruction p\n'
                                   '    tools sh\nflow main:\n    return run agent a "go"\n')
    (tmp_path / "w.yaml").write_text(f'agents:\n  a:\n    - {{tool: run_command, args: {{command: "{marker}; echo x"}}}}\n')
    console = PtyConsole(tmp_path, str(tmp_path / "w.sr"), "--run", "--input", "go")
    try:
        command = f"^{marker}$"  # the sleep itself, not the shell that started it
        _wait(lambda: _pids_running(command), 60, f"the agent's command ({marker})")
        [sleeper] = _pids_running(command)
        for each in signals:
            console.proc.send_signal(each)
            # The kernel delivers standard signals still pending together lowest number first
            # (SIGHUP before SIGTERM): the next one is sent once this one has been taken.
            _wait(lambda: not _pending_signals(console.proc.pid), 60, "the signal to be delivered")
        assert console.exit_code() == 128 + signum, bytes(console.output[-2000:])
        _wait(lambda: not _alive(sleeper), 60, "the command to be killed")
        out = bytes(console.output)
        assert out.rfind(ALT_SCREEN_OFF) > out.rfind(ALT_SCREEN_ON) > -1, out[-500:]
        assert out.rfind(CURSOR_SHOWN) > out.rfind(CURSOR_HIDDEN) > -1, out[-500:]
        restored = termios.ECHO | termios.ICANON
        assert console.modes_after & restored == console.modes_before & restored
    finally:
        console.close()
        for pid in _pids_running(marker):  # a failing run leaves nothing behind either
            os.kill(pid, signal.SIGKILL)
