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
  process holds live at most; a run that comes to wait beyond them parks after PARK_AFTER.
"""

from __future__ import annotations

import logging
import math
import os


def seconds(variable: str, default: float, *, least: float) -> float:
    """`$variable` when it is a number of seconds of at least `least`, else `default` (a value
    that is not is said in one log line)."""
    given = os.environ.get(variable)
    if given is None:
        return default
    try:
        value = float(given)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= least):
        logging.getLogger("escalate.durable").warning(
            "%s=%r: not a number of seconds of at least %g; %g used", variable, given[:40], least, default)
        return default
    return value


def count(variable: str, default: int, *, least: int) -> int:
    """`$variable` when it is a whole number of at least `least`, else `default` (a value that
    is not is said in one log line)."""
    given = os.environ.get(variable)
    if given is None:
        return default
    try:
        value = int(given)
    except ValueError:
        value = least - 1
    if value < least:
        logging.getLogger("escalate.durable").warning(
            "%s=%r: not a whole number of at least %d; %d used", variable, given[:40], least, default)
        return default
    return value
