"""Time from launching `escalate console ...` to its first frame, in fresh processes (shared by
bench_console.py and bench_store.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

# Runs the console command with its app made headless (Textual is imported where the command
# imports it); the first frame is the first screen update of the main screen that leaves for the
# terminal (App._display). Prints the time since the parent's launch and whether ADK was
# imported by then.
CHILD = r"""
import sys, time
t0 = float(sys.argv[1])
import engine.cli.console_cmd as cmd
from engine.cli.main import build_parser
make_app = cmd._app
def headless_app(session, args):  # patched on the instance: Textual is imported as the command does
    app = make_app(session, args)
    original = app._display
    def display(screen, renderable):
        original(screen, renderable)
        if renderable is not None and screen is app.main and not getattr(app, "_seen", False):
            app._seen = True
            adk = "google.genai.types" in sys.modules or "google.adk.agents" in sys.modules
            print(time.time() - t0, adk, flush=True)
            app.exit(0)
    app._display = display
    run = app.run
    app.run = lambda: run(headless=True)
    return app
cmd._app = headless_app
sys.exit(cmd.main(build_parser().parse_args(sys.argv[2:])))
"""


def launches(args: list[str], runs: int) -> list[tuple[float, bool]]:
    """(seconds to the first frame, ADK imported before it) for each of `runs` launches, after one
    launch not counted that leaves the compiled modules behind, as a user's first start does
    (these machines set PYTHONDONTWRITEBYTECODE: every start would compile the project again)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    results = []
    for n in range(runs + 1):
        t0 = time.time()
        out = subprocess.run([sys.executable, "-c", CHILD, repr(t0), *args],
                             capture_output=True, text=True, timeout=120, env=env)
        if out.returncode != 0:
            raise SystemExit(f"the console failed: {out.stderr.strip()}")
        seconds, adk = out.stdout.split()[:2]
        if n:
            results.append((float(seconds), adk == "True"))
    return results
