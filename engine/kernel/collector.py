"""No cyclic-GC pass while a command starts, fewer while ADK warms up (docs/startup.md).

Importing SQLAlchemy, DBOS, pydantic's models, ADK and google.genai makes ~300,000 objects that
all live to the end. With Python's thresholds the collector ran ~490 young, ~45 middle and 4 full
passes over them (16% of those imports' CPU); with the young threshold raised to 50,000 for the
whole start, ~20 passes, still 130-185 ms of a cold `run`'s CPU at load 14-20: each middle pass
walks every object made so far. Now:

- `start_up()` / `started()`: a command's start, until its services are open (engine/cli/main.py
  starts it; engine/services/wiring.py ends it; a command that opens none ends with its
  process). The collector is off; at the end what exists is frozen (`gc.freeze`: out of every
  later pass, as the console does at its first frame) and the collector is on again. Its
  garbage (~800 objects) is frozen with it. A collector that was off (the console) stays off.
- `collecting_less()`: ADK's warm-up (engine/runtime/adk_setup.py), which runs while other work
  may go on (a console's runs) and whose own scripted run leaves ~90,000 objects of garbage:
  young passes every 50,000 allocations and no middle pass (the warm-up freezes what it made
  at its end). Off there too, that garbage was frozen: `run --wait` held 1.3-1.7 MiB more, and
  a collection at the warm-up's end to drop it cost as much CPU as these passes.

Collector CPU of a cold `run` (bench_run_start.py's phases, load 14-20): 130-185 -> 38-69 ms.
"""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

YOUNG_WHILE_WARMING = 50_000  # allocations between young passes during ADK's warm-up
MIDDLE_WHILE_WARMING = 1_000  # young passes between middle ones: none during it (it freezes at its end)

_lock = threading.Lock()
_starting = False
_was_on = False  # the collector was on when the start-up began: it is turned on again at its end
_started_before = False  # a command's start-up ran in this process already (tests call commands again)
_freeze = False  # this start-up freezes what exists at its end
_warming = 0  # warm-ups under way (collecting_less)
_young = _middle = 0  # the thresholds to give back when the last of them ends


@contextmanager
def collecting_less() -> Iterator[None]:
    """ADK's warm-up: young passes every YOUNG_WHILE_WARMING allocations instead of Python's 700
    (its own scripted run leaves ~90,000 objects of garbage: with the collector off meanwhile,
    frozen with the rest, `run --wait` held 1.3-1.7 MiB more, and a pass at its end to drop them
    cost as much CPU as these passes)."""
    global _warming, _young, _middle
    with _lock:
        if _warming == 0:
            young, middle, full = gc.get_threshold()
            _young, _middle = young, middle
            if young:  # 0: automatic collection is off, and stays off
                gc.set_threshold(max(young, YOUNG_WHILE_WARMING), MIDDLE_WHILE_WARMING, full)
        _warming += 1
    try:
        yield
    finally:
        with _lock:
            _warming -= 1
            if _warming == 0:
                _young_now, _middle_now, full = gc.get_threshold()  # the full one as it is now (a console sets its own)
                gc.set_threshold(_young, _middle, full)


def start_up() -> None:
    """The process starts: the collector off until `started()`. Only the process's first
    start-up freezes what exists at its end: a command called again in the same process (the
    tests) would otherwise freeze the garbage of everything before it, for good."""
    global _starting, _was_on, _started_before, _freeze
    with _lock:
        if _starting:
            return
        _starting = True
        _freeze, _started_before = not _started_before, True
        _was_on = gc.isenabled()
        gc.disable()


def started() -> None:
    """The process's services are open: what it imports from now on is a model turn's (its
    warm-up collects less) or a run's (collected as usual). What exists is frozen (the first
    time) and the collector is on again, if it was. Once; later calls do nothing."""
    global _starting
    with _lock:
        if not _starting:
            return
        _starting = False
        if _was_on:
            if _freeze:
                gc.freeze()
            gc.enable()
