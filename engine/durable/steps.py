"""Recorded steps: how a durable run's effects (model turns, tool calls, raised escalations) are
written down once and replayed from the record when the run continues after a crash.

Kept free of DBOS imports until a durable host is open: in-memory runs (tests, the console's
warm-up) just run the function.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any, Awaitable, Callable, TypeVar

from engine.durable.serialization import json_value

T = TypeVar("T")

_enabled = False
# Steps executing now, per run: a stopping worker (`escalate worker` on SIGTERM) lets each finish
# and stops its run at that boundary (`drain`).
_in_flight: dict[str, int] = {}
_on_idle: Callable[[str], None] | None = None
# The crash harness (tests/durable) audits replays: with this set, every live execution of a
# step and every step result handed back to the run is appended to this file, one JSON line.
_AUDIT = os.environ.get("ESCALATE_STEP_AUDIT")


def enable() -> None:
    """Called once DBOS is launched in this process."""
    global _enabled
    _enabled = True


def disable() -> None:
    global _enabled, _on_idle
    _enabled = False
    _on_idle = None


def _in_workflow() -> tuple[Any, bool]:
    from dbos import DBOS

    return DBOS, DBOS.workflow_id is not None and DBOS.step_id is None


async def step(name: str, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`fn(*args)` as a recorded step inside a durable run (on replay: the recorded result,
    `fn` not called); anywhere else, just `fn(*args)`. A recorded result is JSON
    (`json_value`: a tuple comes back as a list), live and replayed alike."""
    if not _enabled:
        return await fn(*args)
    dbos, inside = _in_workflow()
    if not inside:
        return await fn(*args)
    run_id = dbos.workflow_id
    if _on_idle is not None:  # draining: no new step starts; the run stops once its steps end
        if not _in_flight.get(run_id):
            _on_idle(run_id)
        await asyncio.Event().wait()  # cancelled when the run is stopped
    _in_flight[run_id] = _in_flight.get(run_id, 0) + 1

    async def recorded(*inner: Any) -> Any:
        # Recorded as JSON (engine/durable/serialization.py): the live run gets what a replay will.
        return json_value(await fn(*inner))

    try:
        if _AUDIT:
            return await _audited(dbos, name, recorded, *args)
        return await dbos.run_step_async({"name": name, "retries_allowed": False}, recorded, *args)
    finally:
        left = _in_flight[run_id] - 1
        if left:
            _in_flight[run_id] = left
        else:
            del _in_flight[run_id]
            if _on_idle is not None:
                _on_idle(run_id)


def drain(on_idle: Callable[[str], None]) -> set[str]:
    """Stop starting steps: `on_idle(run_id)` is called for each run when its steps in flight
    have finished (and recorded their results), or when it tries to start another one.
    Returns the runs with a step in flight now (the others can be stopped at once)."""
    global _on_idle
    _on_idle = on_idle
    return set(_in_flight)


async def _audited(dbos: Any, name: str, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`live KEY` when a step really executes, `recorded KEY` once its result is in the
    database: a `live` after a `recorded` of the same key would be a finished step repeated."""
    ran: list[str] = []

    async def live(*inner: Any) -> T:
        ran.append(f"{dbos.workflow_id}.{dbos.step_id}")
        _audit("live", ran[0], name)
        return await fn(*inner)

    result = await dbos.run_step_async({"name": name, "retries_allowed": False}, live, *args)
    if ran:
        _audit("recorded", ran[0], name)
    return result


def _audit(kind: str, key: str, name: str) -> None:
    assert _AUDIT is not None
    with open(_AUDIT, "a", encoding="utf-8") as out:
        out.write(json.dumps({"kind": kind, "key": key, "name": name, "pid": os.getpid()}) + "\n")


async def keyed_step(name: str, fn: Callable[[str | None], Awaitable[T]]) -> T:
    """`step`, for a function given the step's key (`step_key()`: None outside a durable run);
    the desk records an escalation's id with it (engine/escalation/desk.py RecordStep)."""
    async def run() -> T:
        return await fn(step_key())

    return await step(name, run)


def step_key() -> str | None:
    """`RUN.STEP` for the step being executed: stable across replays, unique in the database."""
    if not _enabled:
        return None
    from dbos import DBOS

    if DBOS.workflow_id is None or DBOS.step_id is None:
        return None
    return f"{DBOS.workflow_id}.{DBOS.step_id}"


def durable_run_id() -> str | None:
    """The run whose workflow is executing here, if any."""
    if not _enabled:
        return None
    from dbos import DBOS

    return DBOS.workflow_id
