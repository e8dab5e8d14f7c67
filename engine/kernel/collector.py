"""No cyclic-GC passes while a process builds what lives as long as it (docs/startup.md).

Importing SQLAlchemy, DBOS, pydantic's models, ADK and google.genai makes ~300,000 objects that
all live to the end. With Python's thresholds the collector ran ~490 young, ~45 middle and 4 full
passes over them (16% of those imports' CPU); with the young threshold raised to 50,000 while
held, ~29 passes, still 160-190 ms of a cold `run`'s ~1.7 s of CPU at load 18-24: each middle pass
walks every object the imports made so far. While a hold is on the collector is now off; when the
last hold ends, what exists is frozen (`gc.freeze`: out of every later pass, as the console does
at its first frame) and the collector is on again: 3-6 ms in all. Garbage made meanwhile is
frozen with the rest: a `gc.collect()` at that point found ~800 objects after start-up and
~1,200 after the warm-up (~0.1 MiB), and cost 60 ms each (it walks them all). A collector that
was off when the first hold began (the console until its first frame) is left off.

- `start_up()` / `started()`: a command's start, until its services are open (engine/cli/main.py
  starts it; engine/services/wiring.py ends it; a command that opens none ends with its process).
- `collector_off()`: the first model turn's warm-up, ADK's imports (engine/runtime/adk_setup.py).
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_holds = 0
_was_on = False  # the collector was on when the first hold began: it is turned on again at the last release
_freeze = False  # a holder asked that what exists be frozen when the last hold ends
_starting = False
_started_before = False  # a command's start-up ran in this process already (tests call commands again)


def hold(*, freeze: bool) -> None:
    """The collector off until the matching `release`; `freeze`: what exists then is frozen."""
    global _holds, _was_on, _freeze
    with _lock:
        if _holds == 0:
            _was_on = gc.isenabled()
            gc.disable()
        _holds += 1
        _freeze = _freeze or freeze


def release() -> None:
    global _holds, _freeze
    with _lock:
        if _holds == 0:
            return
        _holds -= 1
        if _holds > 0:
            return
        if _was_on:
            if _freeze:
                gc.freeze()
            gc.enable()
        _freeze = False


@contextmanager
def collector_off() -> Iterator[None]:
    """The collector off meanwhile, and what exists frozen at the end: for work that runs once
    per process and makes what lives as long as it (ADK's warm-up)."""
    hold(freeze=True)
    try:
        yield
    finally:
        release()


def start_up() -> None:
    """The process starts: hold until `started()`. Only the process's first start-up freezes
    what exists at its end: a command called again in the same process (the tests) would
    otherwise freeze the garbage of everything before it, for good."""
    global _starting, _started_before
    with _lock:
        if _starting:
            return
        _starting = True
        first, _started_before = not _started_before, True
    hold(freeze=first)


def started() -> None:
    """The process's services are open: what it imports from now on is a model turn's (held by
    its own warm-up) or a run's (collected as usual). Once; later calls do nothing."""
    global _starting
    with _lock:
        if not _starting:
            return
        _starting = False
    release()
