"""Loaded by every Python process started with this folder on PYTHONPATH (bench_suite_processes.py
puts it there): a process started during a test writes one JSON line to $SUITE_PROBE_LOG as it
starts (its command line, the test that started it: $PYTEST_CURRENT_TEST, inherited) and one as
it ends normally (its CPU seconds). Killed processes write no end line."""

import os
import sys

_log = os.environ.get("SUITE_PROBE_LOG")
_test = os.environ.get("PYTEST_CURRENT_TEST")
if _log and _test:
    import atexit
    import json
    import resource
    import time

    _started = time.time()
    _argv = list(sys.orig_argv)[1:8]

    def _write(kind: str, cpu: float | None = None) -> None:
        line = json.dumps({"kind": kind, "pid": os.getpid(), "test": _test.rsplit(" (", 1)[0], "argv": _argv,
                           "cpu": cpu, "wall": round(time.time() - _started, 3)})
        try:
            with open(_log, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError:
            pass

    def _ended() -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        _write("exit", round(usage.ru_utime + usage.ru_stime, 3))

    def _exit_now(code: int, _exit=os._exit) -> None:  # `escalate check` ends with os._exit
        _ended()
        _exit(code)

    _write("start")
    atexit.register(_ended)
    os._exit = _exit_now
