"""Recorded steps: how a durable run's effects (model turns, tool calls, raised escalations) are
written down once and replayed from the record when the run continues after a crash.

A run is a DBOS workflow (engine/durable/host.py); its steps are recorded in escalate's own
table (`escalate_steps`), not through `DBOS.run_step_async`: a run's recorded steps are read
once, at its first step (a run started by this process has none: not read), and replayed from
memory; a new step's result is one INSERT, with the run's events not written yet, in one short
transaction, on the run's loop when SQLite's lock is free (engine/durable/loop_write.py), else on
a worker thread (DBOS's step: a read transaction and a write transaction of ~7 statements, each
on a thread, 1.4-1.8 ms a step; docs/durable.md, "What a turn costs"). Steps are numbered by DBOS's own counter
(`DBOS.reserve_step`), so a step's number, hence `step_key()`, is the one DBOS gave it before:
deterministic in call order, parallel branches included, and a run recorded in DBOS's
`operation_outputs` by an earlier escalate replays from there. Two executions recording the same
step: the first wins (the table's key); the other stops as DBOS stops an execution that no longer
owns its workflow (`DBOSWorkflowConflictIDError`).

Kept free of DBOS imports until a durable host is open: in-memory runs (tests, the console's
warm-up) just run the function.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from engine.durable.serialization import JSON_FORMAT, json_value

if TYPE_CHECKING:
    import sqlalchemy as sa

    from engine.durable.database import Database

T = TypeVar("T")

_db: "Database | None" = None  # set while a durable host is open in this process
# Steps executing now, per run: a stopping worker (`escalate worker` on SIGTERM) lets each finish
# and stops its run at that boundary (`drain`).
_in_flight: dict[str, int] = {}
_on_idle: Callable[[str], None] | None = None
# The crash harness (tests/durable) audits replays: with this set, every live execution of a
# step and every step result handed back to the run is appended to this file, one JSON line.
_AUDIT = os.environ.get("ESCALATE_STEP_AUDIT")


@dataclass
class _Recorded:
    """One execution of a run: its recorded steps not replayed yet, read at its first step
    (step -> name, result JSON, error JSON, format)."""

    run_id: str
    steps: dict[int, tuple[str, str | None, str | None, str | None]] = field(default_factory=dict)
    loading: "asyncio.Future[None] | None" = None


# The execution of the run whose workflow body this is (`begin`): every task of the run (ADK
# runs each model call in a task of its own, parallel branches in theirs) has a copy of the
# context that holds this one object.
_execution: contextvars.ContextVar[_Recorded | None] = contextvars.ContextVar("escalate_execution", default=None)
# The step being executed live (`RUN.STEP`): a step inside it is part of it, and `step_key()` names it.
_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("escalate_step", default=None)


def enable(db: "Database") -> None:
    """Called once DBOS is launched in this process, on its database."""
    global _db
    _db = db


def disable() -> None:
    global _db, _on_idle
    _db = None
    _on_idle = None


def begin(run_id: str) -> None:
    """A run's workflow begins executing (the first line of its body): the steps it records are
    read at its first step, once, and kept for this execution (its context) only."""
    _execution.set(_Recorded(run_id))


def nothing_recorded() -> None:
    """The run executing here was created by this process for this execution (its row just
    written under a new id, and rows are never deleted): it has no recorded steps, so its first
    step reads none (a hop and three statements less a run's start)."""
    already_read({})


def already_read(recorded: dict[int, tuple[str, str | None, str | None, str | None]]) -> None:
    """The run's recorded steps (`recorded_steps`), read by this process after it claimed the run
    and before this execution began (engine/durable/host.py `take_back`): its first step reads
    them no more (a hop and three statements less a parked run's wake)."""
    execution = _execution.get()
    if execution is not None and execution.loading is None:
        execution.steps = recorded
        execution.loading = asyncio.get_running_loop().create_future()
        execution.loading.set_result(None)


async def step(name: str, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`fn(*args)` as a recorded step inside a durable run (on replay: the recorded result, or
    the recorded error raised again as `PortableWorkflowError`; `fn` not called); anywhere else,
    and inside another step, just `fn(*args)`. A recorded result is JSON (`json_value`: a tuple
    comes back as a list), live and replayed alike."""
    if _db is None or _current.get() is not None:
        return await fn(*args)
    from dbos import DBOS

    run_id = DBOS.workflow_id
    if run_id is None or DBOS.step_id is not None:  # not in a workflow, or in a step of DBOS's
        return await fn(*args)
    execution = _execution.get()
    if execution is None or execution.run_id != run_id:
        # A workflow that did not `begin` (a test's): read for this task's steps.
        execution = _Recorded(run_id)
        _execution.set(execution)
    if _on_idle is not None:  # draining: no new step starts; the run stops once its steps end
        if not _in_flight.get(run_id):
            _on_idle(run_id)
        await asyncio.Event().wait()  # cancelled when the run is stopped
    number = DBOS.reserve_step().step_id  # DBOS's next step id: what it would have recorded this step at
    _in_flight[run_id] = _in_flight.get(run_id, 0) + 1
    try:
        await _load(_db, execution)
        recorded = execution.steps.pop(number, None)  # each number comes once an execution: not kept
        if recorded is not None:
            return _replayed(run_id, number, name, recorded)
        return await _live(_db, execution, number, name, fn, args)
    finally:
        left = _in_flight[run_id] - 1
        if left:
            _in_flight[run_id] = left
        else:
            del _in_flight[run_id]
            if _on_idle is not None:
                _on_idle(run_id)


async def _live(db: "Database", execution: _Recorded, number: int, name: str, fn: Callable[..., Awaitable[Any]],
                args: tuple[Any, ...]) -> Any:
    key = f"{execution.run_id}.{number}"
    token = _current.set(key)
    try:
        if _AUDIT:
            _audit("live", key, name)
        try:
            value = json_value(await fn(*args))
        except Exception as exc:
            error = json.dumps({"name": type(exc).__name__, "message": str(exc)}, ensure_ascii=False)
            await _record(db, execution, number, name, None, error)
            raise
    finally:
        _current.reset(token)
    # Recorded as JSON (engine/durable/serialization.py): the live run gets what a replay will.
    await _record(db, execution, number, name, json.dumps(value, separators=(",", ":"), ensure_ascii=False), None)
    return value


async def _record(db: "Database", execution: _Recorded, number: int, name: str, result: str | None,
                  error: str | None) -> None:
    """One transaction: the step's row and the run's events queued before it. The step is
    recorded when this returns (the audit's `recorded` line follows the commit). Written here,
    on the run's loop, when SQLite's lock is free (no hop), else on a thread, where a wait for
    the lock (or PostgreSQL's round trip) never holds up the loop."""
    run_id = execution.run_id
    row = {"run_id": run_id, "step": number, "name": name, "result": result, "error": error}
    first = db.record_step_now(row)
    if first is None:
        first = await asyncio.to_thread(db.with_events, run_id, lambda c: _insert(c, row))
    if not first:
        from dbos import error as dbos_error

        # Another execution of this run recorded the step first: as DBOS does with an execution
        # that lost its workflow, this one stops (a BaseException: no handler of the run takes it).
        raise dbos_error.DBOSWorkflowConflictIDError(run_id)
    if _AUDIT:
        _audit("recorded", f"{run_id}.{number}", name)


def _insert(c: "sa.Connection", row: dict[str, Any]) -> bool:
    """Whether this execution recorded the step (False: it was recorded already)."""
    from engine.durable.database import step_statements

    return bool(c.execute(step_statements(c.dialect.name).record, row).rowcount == 1)


async def _load(db: "Database", execution: _Recorded) -> None:
    """The execution's recorded steps, read once (parallel branches wait for the one read)."""
    if execution.loading is None:
        execution.loading = asyncio.get_running_loop().create_future()
        try:
            execution.steps = await asyncio.to_thread(recorded_steps, db, execution.run_id)
        except BaseException as exc:
            execution.loading.set_exception(exc)
            execution.loading.exception()  # retrieved: the branch that read raises it
            execution.loading = None
            raise
        execution.loading.set_result(None)
    else:
        await asyncio.shield(execution.loading)


def recorded_steps(db: "Database", run_id: str) -> dict[int, tuple[str, str | None, str | None, str | None]]:
    """A run's recorded steps: escalate's (schema version 3 on), and those an earlier escalate
    recorded through DBOS (its `operation_outputs`, when DBOS has made it), one read."""
    from engine.durable.database import step_statements

    with db.engine.connect() as c:
        statements = step_statements(c.dialect.name)
        found = {int(step): (name, result, error, JSON_FORMAT)
                 for step, name, result, error in c.execute(statements.recorded, {"run_id": run_id})}
        if c.execute(statements.dbos_present).scalar():
            for step, name, output, error, fmt in c.execute(statements.dbos_recorded, {"run_id": run_id}):
                found.setdefault(int(step), (name, output, error, fmt))
    return found


def _replayed(run_id: str, number: int, name: str, recorded: tuple[str, str | None, str | None, str | None]) -> Any:
    """A recorded step's result (or its error, raised again); a recorded step of another name
    means the flow no longer does what it did (its file changed): the run stops, as DBOS stops it."""
    from dbos import PortableWorkflowError
    from dbos import error as dbos_error

    from engine.durable import rows as checked

    recorded_name, result, error, fmt = recorded
    if recorded_name != name:
        raise dbos_error.DBOSUnexpectedStepError(run_id, number, name, str(recorded_name))
    if fmt != JSON_FORMAT:  # refused before the run was continued (serialization.scan); a row written since
        from engine.durable.serialization import PickleRefused

        raise PickleRefused(f"run {run_id}: step {number} ({name}) is stored as {fmt}, not JSON: refused")
    if error is not None:
        data = checked.parse_json(error, "escalate_steps", f"{run_id}.{number}", "error")
        data = data if isinstance(data, dict) else {}
        raise PortableWorkflowError(str(data.get("message", "")), str(data.get("name", "Error")))
    if result is None:
        raise checked.BadRow(f"escalate_steps row '{run_id}.{number}': neither a result nor an error")
    return checked.parse_json(result, "escalate_steps", f"{run_id}.{number}", "result")


def drain(on_idle: Callable[[str], None]) -> set[str]:
    """Stop starting steps: `on_idle(run_id)` is called for each run when its steps in flight
    have finished (and recorded their results), or when it tries to start another one.
    Returns the runs with a step in flight now (the others can be stopped at once)."""
    global _on_idle
    _on_idle = on_idle
    return set(_in_flight)


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
    return _current.get() if _db is not None else None
