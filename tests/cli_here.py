"""`escalate ARGS` run in the test's own process: engine/cli/main.py `main`, its output caught in
streams like a process's own (UTF-8; stdout made to escape what it cannot encode, as main does
for a process's stdout; stderr escaping as Python's does), its log's warnings on that stderr as
Python's last-resort handler writes them in a process that set no handler (pytest has set its
own here), its exit code as a process would end.

For tests of what a short command (`answer`, `runs`, `check`) says and returns on a database or
file: each saves the ~0.4 s of CPU (1.3 s under load) a new process spends importing escalate.
And for a `run` or `resume` that only sets up or completes what a test is about (a run left
waiting, the run a refused command left as it was): ~0.1 s of CPU once this process has
imported ADK, where a process takes ~1.5-2 s; only from a test whose thread runs no event loop
(`run` starts its own, and sets its signal handlers: the main thread). Not for what only a
process shows (signals, kills, processes racing, its exit path, its environment, `script()`'s
`os._exit`): those start `python -m engine`."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
from pathlib import Path

from engine.cli.main import main


def _stream(errors: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def escalate_here(*args: str, cwd: Path | str) -> subprocess.CompletedProcess[str]:
    """What `subprocess.run([python, -m, engine, *args], cwd=cwd, capture_output=True, text=True)`
    gives, from main() here."""
    out, err = _stream("strict"), _stream("backslashreplace")
    log = logging.StreamHandler(err)
    log.setLevel(logging.lastResort.level if logging.lastResort else logging.WARNING)
    root = logging.getLogger()
    root.addHandler(log)
    try:
        with contextlib.chdir(os.fspath(cwd)), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors: exit 2, the usage on stderr
                code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        root.removeHandler(log)
    return subprocess.CompletedProcess(["escalate", *args], code, _text(out), _text(err))


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]  (a BytesIO)
