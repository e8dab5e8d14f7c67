"""Fewer cyclic-GC passes while a process builds what lives as long as it (docs/startup.md).

Importing SQLAlchemy, DBOS, pydantic's models, ADK and google.genai makes ~200,000 objects that
all live to the end; with Python's default young-generation threshold (700) the collector runs
~430 young, ~40 middle and 3 full passes over them: 16% of those imports' CPU time, for almost
no garbage. While a hold is on, the young generation is collected every YOUNG_WHILE_HELD
allocations instead (7 passes, ~6%). The middle and full thresholds are left as they are (the
console sets its own, tui/session.py), and the young one comes back when the last hold ends.

- `start_up()` / `started()`: a command's start, until its services are open (engine/cli/main.py
  starts it; engine/services/wiring.py ends it; a command that opens none ends with its process).
- `collecting_less()`: the first model turn's warm-up, ADK's imports (engine/runtime/adk_setup.py).
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

YOUNG_WHILE_HELD = 50_000  # allocations between young passes; measured: 10,000 left 10%, 200,000 5%

_lock = threading.Lock()
_holds = 0
_young = 0  # the young threshold to give back when the last hold ends
_starting = False


def hold() -> None:
    global _holds, _young
    with _lock:
        if _holds == 0:
            young, middle, full = gc.get_threshold()
            _young = young
            if young:  # 0: automatic collection is off, and stays off
                gc.set_threshold(max(young, YOUNG_WHILE_HELD), middle, full)
        _holds += 1


def release() -> None:
    global _holds
    with _lock:
        if _holds == 0:
            return
        _holds -= 1
        if _holds == 0:
            _young_now, middle, full = gc.get_threshold()  # the others as they are now (a console sets its own)
            gc.set_threshold(_young, middle, full)


@contextmanager
def collecting_less() -> Iterator[None]:
    hold()
    try:
        yield
    finally:
        release()


def start_up() -> None:
    """The process starts: hold until `started()`."""
    global _starting
    with _lock:
        if _starting:
            return
        _starting = True
    hold()


def started() -> None:
    """The process's services are open: what it imports from now on is a model turn's (held by
    its own warm-up) or a run's (collected as usual). Once; later calls do nothing."""
    global _starting
    with _lock:
        if not _starting:
            return
        _starting = False
    release()
