"""Rows as read from the database, checked before anything uses them (issue 22, finding 11).

A row is not necessarily what this version of escalate wrote: a database cloned with a
repository, another version's row on a shared PostgreSQL, a disk error. Each row is checked
against its declared record (below), its JSON read with bounded size and depth; a row that does
not fit raises `BadRow`, one line naming its table and id, which listings report once
(`report`) and skip, and single reads (`escalate answer ID`) print.

Unknown keys are kept (a newer version's field is not an error); missing keys, wrong types,
unknown statuses, times that are not finite epoch seconds are errors.

The records are plain Python, declared as the strict pydantic models they replace were (issue
26): `escalate answer` and `runs` read rows, and nothing else on their path needs pydantic;
importing it and building these eight models was ~65 ms of `answer`'s ~330 ms of CPU. The
verdicts, places and messages are pydantic's (an integer past a float's range: "a finite
number", where pydantic said "a valid number").
"""

from __future__ import annotations

import json
import logging
import math
import threading
from enum import Enum
from typing import Any, Callable

from engine.durable.urls import DatabaseError
from engine.kernel.model import OnTimeout, Origin, Reason, ResolvedBy, ResponseType

log = logging.getLogger("escalate.durable")

JSON_MAX_CHARS = 16 * 1024 * 1024  # one JSON column of one row; escalate writes far less
JSON_MAX_DEPTH = 64  # nesting of objects and lists; escalate's own JSON is a few levels deep
TIME_MAX = 100_000_000_000  # epoch seconds (year 5138): past it, dates cannot be shown
RUN_STATUSES = ("queued", "running", "waiting", "parked", "done", "failed", "stopped", "aborted", "cancelled", "interrupted")


class BadRow(DatabaseError):
    """A row that is not what escalate writes: `escalate_escalations row 'r1.2': payload: ...`."""


class _Misfit(Exception):
    """What is wrong, as pydantic says it, and where in the value (keys and list indexes: each
    record or list adds its own on the way out, so a value that fits builds no location)."""

    def __init__(self, message: str, *where: Any) -> None:
        super().__init__(message)
        self.message, self.where = message, where


Check = Callable[[Any], None]  # raises _Misfit


def _string(value: Any) -> None:
    if not isinstance(value, str):
        raise _Misfit("Input should be a valid string")


def _boolean(value: Any) -> None:
    if not isinstance(value, bool):
        raise _Misfit("Input should be a valid boolean")


def _number(low: float | None = None, high: float | None = None) -> Check:
    """A finite int or float (never a bool), within [low, high] when given."""
    def check(value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Misfit("Input should be a valid number")
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an int past a float's range: no time, no number of seconds
            finite = False
        if not finite:
            raise _Misfit("Input should be a finite number")
        if low is not None and value < low:
            raise _Misfit(f"Input should be greater than or equal to {low}")
        if high is not None and value > high:
            raise _Misfit(f"Input should be less than or equal to {high}")
    return check


def _one_of(values: tuple[str, ...]) -> Check:
    shown = ", ".join(repr(v) for v in values[:-1]) + f" or {values[-1]!r}" if len(values) > 1 else repr(values[0])

    def check(value: Any) -> None:
        if not isinstance(value, str) or value not in values:
            raise _Misfit(f"Input should be {shown}")
    return check


def _values(enum: type[Enum]) -> Check:
    """One of the enum's values: a row holds the value, as the engine's JSON writes it."""
    return _one_of(tuple(member.value for member in enum))


def _dictionary(value: Any) -> None:
    if not isinstance(value, dict):
        raise _Misfit("Input should be a valid dictionary")


def _list_of(check: Check) -> Check:
    def each(value: Any) -> None:
        if not isinstance(value, list):
            raise _Misfit("Input should be a valid list")
        for index, item in enumerate(value):
            try:
                check(item)
            except _Misfit as misfit:
                misfit.where = (index, *misfit.where)
                raise
    return each


class _Or:
    """A field's check and what else it takes: None (`nullable`), or nothing (`default`)."""

    def __init__(self, check: Check, *, nullable: bool = False, default: bool = False) -> None:
        self.check, self.nullable, self.default = check, nullable, default


def _or_none(check: Check) -> _Or:
    return _Or(check, nullable=True)


def _or_missing(check: Check | _Or) -> _Or:
    """A field with a default: it may be missing."""
    inner = check if isinstance(check, _Or) else _Or(check)
    return _Or(inner.check, nullable=inner.nullable, default=True)


class _Record:
    """An object with these fields, checked in their order (the first misfit is reported);
    other keys are kept and not checked."""

    def __init__(self, name: str, **fields: Check | _Or) -> None:
        self.name = name
        self.fields = [(key, *((spec.check, spec.nullable, spec.default) if isinstance(spec, _Or) else (spec, False, False)))
                       for key, spec in fields.items()]

    def __call__(self, value: Any) -> None:
        if not isinstance(value, dict):
            raise _Misfit(f"Input should be a valid dictionary or instance of {self.name}")
        for key, check, nullable, default in self.fields:
            if key in value:
                item = value[key]
                if item is None and nullable:
                    continue
                try:
                    check(item)
                except _Misfit as misfit:
                    misfit.where = (key, *misfit.where)
                    raise
            elif not default:
                raise _Misfit("Field required", key)


Time = _number(0, TIME_MAX)
Seconds = _number(0)
_optional_text = _or_missing(_or_none(_string))

# ---- escalate_escalations.payload --------------------------------------------------------------

OptionJson = _Record("OptionJson", id=_string, label=_string, description=_or_missing(_string),
                     recommended=_or_missing(_boolean))

EscalationJson = _Record(
    "EscalationJson", id=_string, task_id=_string, run_id=_string, agent=_string, reason=_values(Reason),
    question=_string, context=_or_missing(_string), options=_list_of(OptionJson),
    allow_agent_decision=_or_missing(_boolean), timeout=_or_missing(_or_none(Seconds)),
    origin=_or_missing(_values(Origin)), created_at=_or_missing(_or_none(Time)))

PolicyJson = _Record("PolicyJson", deadline=_or_none(Time), on_timeout=_values(OnTimeout), option_id=_optional_text,
                     timeout_seconds=_or_missing(_or_none(Seconds)))

PayloadJson = _Record("PayloadJson", escalation=EscalationJson, policy=PolicyJson,
                      extra=_or_missing(_or_none(_dictionary)))

# ---- escalate_escalations.decision ---------------------------------------------------------------

DecisionJson = _Record(
    "DecisionJson", responseType=_values(ResponseType), selectedOption=_optional_text, textResponse=_optional_text,
    additionalInstructions=_optional_text, resolvedBy=_values(ResolvedBy), resolvedAt=_or_missing(_or_none(Time)),
    note=_or_missing(_string), stopsTask=_or_missing(_boolean), editedArgs=_or_missing(_or_none(_dictionary)),
    rule=_optional_text, via=_optional_text, shown=_optional_text, decidedBy=_optional_text)

# ---- the rows ------------------------------------------------------------------------------------

EscalationRow = _Record(
    "EscalationRow", id=_string, run_id=_string, created=Time, deadline=_or_none(Time), payload=PayloadJson,
    status=_one_of(("pending", "decided", "withdrawn")), decision=_or_none(DecisionJson),
    resolved_by=_or_none(_string), decided_at=_or_none(Time))

RunRow = _Record(
    "RunRow", run_id=_string, task=_string, workflow=_string, path=_string, flow=_or_none(_string), input=_string,
    script=_or_none(_string), rules=_or_none(_string), workspace=_string, status=_one_of(RUN_STATUSES),
    result=_or_none(_string), error=_or_none(_string), started=Time, finished=_or_none(Time),
    owner=_or_none(_string), heartbeat=_or_none(_number()))

AgentEntryRow = _Record("AgentEntryRow", time=Time, source=_string, target=_string, approved=_boolean, reason=_string,
                        task=_string, denial=_or_none(_string))


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


def _check(record: _Record, data: Any, table: str, key: Any, column: str = "") -> None:
    try:
        record(data)
    except _Misfit as misfit:
        where = ".".join(str(part) for part in misfit.where)
        where = f"{column}.{where}" if column and where else column or where
        raise BadRow(f"{table} row {_shown(key)}: {where or 'row'}: {misfit.message}"[:400]) from None


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


def agent_entry(row: dict[str, Any]) -> dict[str, Any]:
    """An agent-to-agent history row (seed 002), checked; raises BadRow."""
    _check(AgentEntryRow, row, "escalate_agent_history", row.get("id", "?"))
    return row
