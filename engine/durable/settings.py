"""Durations an operator may set through the environment, read once when the module that uses
each is imported: every process that shares a database must be given the same values.

- `ESCALATE_STALE_AFTER` (database.py STALE_AFTER, 10 s): an owner silent this long counts as
  gone (a process of another host; one of this host is looked up), its runs interrupted.
- `ESCALATE_PARK_AFTER` (engine/services/parking.py PARK_AFTER, 2 s): how long a worker's run
  waiting for a person keeps its place before it parks.
- `ESCALATE_PARK_LIVE_AFTER` (engine/services/parking.py PARK_LIVE_AFTER, 600 s): how long a run
  held live (a console, `run --wait`, `resume`) waits for a person as a live coroutine before it
  parks (rows only) in its process, which continues it itself on its decision.
- `ESCALATE_LIVE_WAITING` (engine/services/parking.py LIVE_WAITING, 8): how many waiting runs a
  process holds live at most; a run that comes to wait beyond them parks at once (while other
  runs execute there, once none does, at most after PARK_AFTER).
"""

from __future__ import annotations

import logging
import math
import os
from typing import Callable, TypeVar

T = TypeVar("T", int, float)


def seconds(variable: str, default: float, *, least: float) -> float:
    """`$variable` when it is a number of seconds of at least `least`, else `default` (a value
    that is not is said in one log line)."""
    return _setting(variable, default, least, float, "a number of seconds")


def count(variable: str, default: int, *, least: int) -> int:
    """`$variable` when it is a whole number of at least `least`, else `default` (a value that
    is not is said in one log line)."""
    return _setting(variable, default, least, int, "a whole number")


def _setting(variable: str, default: T, least: T, read: Callable[[str], T], what: str) -> T:
    given = os.environ.get(variable)
    if given is None:
        return default
    try:
        value = read(given)
        fits = math.isfinite(value) and value >= least
    except (ValueError, OverflowError):  # not a number; a whole number past a float's range
        fits = False
    if not fits:
        logging.getLogger("escalate.durable").warning(
            "%s=%r: not %s of at least %g; %g used", variable, given[:40], what, least, default)
        return default
    return value
