"""Rows as read from the database, checked before anything uses them (issue 22, finding 11).

A row is not necessarily what this version of escalate wrote: a database cloned with a
repository, another version's row on a shared PostgreSQL, a disk error. Each row is checked
against a pydantic model (as rules/schema.py checks files), its JSON read with bounded size and
depth; a row that does not fit raises `BadRow`, one line naming its table and id, which listings
report once (`report`) and skip, and single reads (`escalate answer ID`) print.

Unknown keys are kept (a newer version's field is not an error); missing keys, wrong types,
unknown statuses, times that are not finite epoch seconds are errors.
"""

from __future__ import annotations

import json
import logging
import threading
from enum import Enum
from typing import Annotated, Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.durable.urls import DatabaseError
from engine.kernel.model import OnTimeout, Origin, Reason, ResolvedBy, ResponseType

log = logging.getLogger("escalate.durable")

JSON_MAX_CHARS = 16 * 1024 * 1024  # one JSON column of one row; escalate writes far less
JSON_MAX_DEPTH = 64  # nesting of objects and lists; escalate's own JSON is a few levels deep
TIME_MAX = 1e11  # epoch seconds (year 5138): past it, dates cannot be shown

Time = Annotated[float, Field(ge=0, le=TIME_MAX, allow_inf_nan=False)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
RUN_STATUSES = ("queued", "running", "waiting", "parked", "done", "failed", "stopped", "aborted", "cancelled", "interrupted")


class BadRow(DatabaseError):
    """A row that is not what escalate writes: `escalate_escalations row 'r1.2': payload: ...`."""


def _values(enum: type[Enum]) -> Any:
    """The enum's values as a Literal: a row holds the value, as the engine's JSON writes it."""
    return Literal[tuple(member.value for member in enum)]  # type: ignore[valid-type]


class _Row(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


# ---- escalate_escalations.payload --------------------------------------------------------------


class OptionJson(_Row):
    id: str
    label: str
    description: str = ""
    recommended: bool = False


class EscalationJson(_Row):
    id: str
    task_id: str
    run_id: str
    agent: str
    reason: _values(Reason)
    question: str
    context: str = ""
    options: list[OptionJson]
    allow_agent_decision: bool = False
    timeout: Seconds | None = None
    origin: _values(Origin) = Origin.AGENT_TEXT.value
    created_at: Time | None = None


class PolicyJson(_Row):
    deadline: Time | None
    on_timeout: _values(OnTimeout)
    option_id: str | None = None
    timeout_seconds: Seconds | None = None


class PayloadJson(_Row):
    escalation: EscalationJson
    policy: PolicyJson
    extra: dict[str, Any] | None = None


# ---- escalate_escalations.decision ---------------------------------------------------------------


class DecisionJson(_Row):
    responseType: _values(ResponseType)
    selectedOption: str | None = None
    textResponse: str | None = None
    additionalInstructions: str | None = None
    resolvedBy: _values(ResolvedBy)
    resolvedAt: Time | None = None
    note: str = ""
    stopsTask: bool = False
    editedArgs: dict[str, Any] | None = None
    rule: str | None = None
    via: str | None = None
    shown: str | None = None
    decidedBy: str | None = None


# ---- the rows ------------------------------------------------------------------------------------


class EscalationRow(_Row):
    id: str
    run_id: str
    created: Time
    deadline: Time | None
    payload: PayloadJson
    status: Literal["pending", "decided", "withdrawn"]
    decision: DecisionJson | None
    resolved_by: str | None
    decided_at: Time | None


class RunRow(_Row):
    run_id: str
    task: str
    workflow: str
    path: str
    flow: str | None
    input: str
    script: str | None
    rules: str | None
    workspace: str
    status: Literal[RUN_STATUSES]  # type: ignore[valid-type]
    result: str | None
    error: str | None
    started: Time
    finished: Time | None
    owner: str | None
    heartbeat: Annotated[float, Field(allow_inf_nan=False)] | None


def escalation(row: dict[str, Any]) -> dict[str, Any]:
    """An escalations row with its payload and decision parsed, checked; raises BadRow."""
    key = row.get("id")
    out = dict(row)
    out["payload"] = parse_json(row.get("payload"), "escalate_escalations", key, "payload")
    out["decision"] = parse_json(row["decision"], "escalate_escalations", key, "decision") if row.get("decision") is not None else None
    _check(EscalationRow, out, "escalate_escalations", key)
    if out["payload"]["escalation"]["id"] != out["id"]:
        raise BadRow(f"escalate_escalations row {_shown(key)}: its payload is escalation {_shown(out['payload']['escalation']['id'])}")
    return out


def decision(data: Any, esc_id: str) -> dict[str, Any]:
    """A decision's JSON (already parsed), checked; raises BadRow."""
    _check(DecisionJson, data, "escalate_escalations", esc_id, "decision")
    return data


def run(row: dict[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """A runs row with its `paths` columns (kept as JSON strings) read back, checked; raises BadRow."""
    name = row.get("run_id")
    out = dict(row)
    for key in paths:
        if out.get(key) is not None:
            out[key] = parse_json(out[key], "escalate_runs", name, key)
    _check(RunRow, out, "escalate_runs", name)
    if out["result"] is not None:
        parse_json(out["result"], "escalate_runs", name, "result")
    return out


def event_fields(text: Any, run_id: str, seq: Any) -> dict[str, Any]:
    """An events row's fields; raises BadRow."""
    fields = parse_json(text, "escalate_events", f"{run_id} #{seq}", "fields")
    if not isinstance(fields, dict):
        raise BadRow(f"escalate_events row {_shown(run_id)} #{seq}: fields: not a JSON object")
    return fields


def parse_json(text: Any, table: str, key: Any, column: str) -> Any:
    """One JSON column of the row whose id is `key`, bounded in size and depth; raises BadRow."""
    def where() -> str:  # only for a bad row: naming costs more than checking
        return f"{table} row {_shown(key)}: {column}"

    if not isinstance(text, str):
        raise BadRow(f"{where()}: {type(text).__name__} where JSON text is expected")
    if len(text) > JSON_MAX_CHARS:
        raise BadRow(f"{where()}: {len(text):,} characters of JSON (at most {JSON_MAX_CHARS:,})")
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadRow(f"{where()}: JSON nested deeper than {JSON_MAX_DEPTH}") from None
    except ValueError as exc:
        raise BadRow(f"{where()}: not JSON ({str(exc)[:100]})") from None
    # Nesting is never deeper than the brackets are many (a count is cheap, a walk is not).
    if text.count("[") + text.count("{") > JSON_MAX_DEPTH and _too_deep(value):
        raise BadRow(f"{where()}: JSON nested deeper than {JSON_MAX_DEPTH}")
    return value


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > JSON_MAX_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _check(model: type[BaseModel], data: Any, table: str, key: Any, column: str = "") -> None:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        where = f"{column}.{where}" if column and where else column or where
        raise BadRow(f"{table} row {_shown(key)}: {where or 'row'}: {first['msg']}"[:400]) from None


def _shown(value: Any) -> str:
    """An id as a line may show it: quoted, printable, short."""
    from engine.text_safety import visible

    text = value if isinstance(value, str) else repr(value)
    return repr(visible(text[:100]))


# ---- reporting -----------------------------------------------------------------------------------

_told: set[str] = set()
_listeners: list[Callable[[str], None]] = []
_lock = threading.Lock()


def report(bad: BadRow) -> None:
    """Say once per process that a row was skipped: a warning in the log (stderr for a
    command) and to each listener (the console's notification)."""
    line = f"skipped {bad}"
    with _lock:
        if line in _told:
            return
        _told.add(line)
        listeners = list(_listeners)
    log.warning("%s", line)
    for listener in listeners:
        try:
            listener(line)
        except Exception:  # one that failed (a console whose loop has closed) stops neither the others nor the read
            log.debug("a bad-row listener failed", exc_info=True)


def on_bad_row(listener: Callable[[str], None]) -> Callable[[], None]:
    """Call `listener(line)` for each row skipped from now on (from any thread); returns `stop`."""
    with _lock:
        _listeners.append(listener)

    def stop() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return stop


def valid(rows: Any, read: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]]:
    """`read(row)` for each row, skipping (and reporting) the bad ones."""
    out = []
    for row in rows:
        try:
            out.append(read(row))
        except BadRow as bad:
            report(bad)
    return out


class AgentEntryRow(_Row):
    time: Time
    source: str
    target: str
    approved: bool
    reason: str
    task: str
    denial: str | None


def agent_entry(row: dict[str, Any]) -> dict[str, Any]:
    """An agent-to-agent history row (seed 002), checked; raises BadRow."""
    _check(AgentEntryRow, row, "escalate_agent_history", row.get("id", "?"))
    return row
