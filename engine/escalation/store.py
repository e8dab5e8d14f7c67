"""The JSON-lines history file of earlier versions (`escalate console --store PATH`), read to be
imported into the database once (engine/durable/history.py); nothing writes it any more.

One line per fact, each a JSON object with the schema version `v`, its `kind` and `at` (ISO 8601
UTC, wall-clock time):

- `raised`: an escalation as it was asked (every field of it) and its timeout policy;
- `resolved`: its decision (the contract's `decision` event fields, plus the note);
- `withdrawn`: it was withdrawn with a cancelled run;
- `agent_escalation`: one seed 002 history entry (source, target, approved, reason, task, denial);
- `run`: a run that ended (id, task, workflow, flow, input, status, result summary, error, start).

Escalation ids are unique within one session only: a `resolved`/`withdrawn` line closes the
latest open `raised` line with that id. A torn last line (a crash mid-write) is ignored.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from engine.escalation.agent_policy import Denial, HistoryEntry
from engine.files import UnreadableFile, read_limited
from engine.kernel.jsonable import jsonable
from engine.positions import byte_position
from engine.kernel.model import (
    Decision,
    Escalation,
    EscalationRecord,
    OnTimeout,
    Option,
    Origin,
    PendingEscalation,
    Reason,
    ResolvedBy,
    Response,
    ResponseType,
    TimeoutPolicy,
)

SCHEMA_VERSION = 1
SUMMARY_LIMIT = 500  # characters of a run's result kept (a summary, not the whole output)
MAX_STORE_BYTES = 1 << 30  # a store grew a line per fact: far below this in any real use


class StoreError(Exception):
    """One line, ready for stderr: `FILE:LINE:COL: error: message` or `PATH: error: message`."""


@dataclass(frozen=True)
class StoredRun:
    id: str
    task: str
    workflow: str
    flow: str | None
    input: str
    status: str
    result: str | None  # a summary: text as it is, other values as JSON, cut to SUMMARY_LIMIT
    error: str | None
    started_at: float  # wall clock (epoch seconds), like every time read
    finished_at: float


@dataclass
class StoreContents:
    escalations: list[EscalationRecord] = field(default_factory=list)  # all `earlier`
    agent_entries: list[HistoryEntry] = field(default_factory=list)
    runs: list[StoredRun] = field(default_factory=list)


# ---- time ----------------------------------------------------------------------------------


def iso(wall: float) -> str:
    return datetime.fromtimestamp(wall, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _wall(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()  # 3.11 reads the trailing Z


# ---- reading a store ---------------------------------------------------------------------------


def store_size(path: Path) -> int:
    """The store's size in bytes (0: there is none yet); StoreError when the path is unusable."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if not Path(path).parent.is_dir():
            raise StoreError(f"{path}: error: cannot open the store: {os.strerror(errno.ENOTDIR)}") from None
        return 0
    except OSError as exc:
        raise StoreError(f"{path}: error: cannot open the store: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{path}: error: cannot open the store: {os.strerror(errno.EISDIR)}")
    if not stat.S_ISREG(info.st_mode):  # a FIFO or a device would block or never end
        raise StoreError(f"{path}: error: cannot read the store: not a regular file")
    if not os.access(path, os.R_OK):
        raise StoreError(f"{path}: error: cannot open the store: {os.strerror(errno.EACCES)}")
    return info.st_size


def read_store(path: Path) -> StoreContents:
    """Every fact of a store (none when there is no file); StoreError at the first bad line."""
    if store_size(path) == 0:
        return StoreContents()
    try:
        data = read_limited(Path(path), MAX_STORE_BYTES)
    except UnreadableFile as exc:
        raise StoreError(f"{path}: error: cannot read the store: {exc}") from None
    data = data[: data.rfind(b"\n") + 1]  # a torn last line is not read
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = byte_position(data, exc.start)
        raise StoreError(f"{path}:{line}:{col}: error: not UTF-8 text") from None
    return parse(text, str(path), lambda wall: wall)


def summary(value: Any) -> str | None:
    """A run's result as kept in history: text as it is, any other value as JSON, cut to SUMMARY_LIMIT."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(jsonable(value), ensure_ascii=False)
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


# ---- parsing ---------------------------------------------------------------------------------


class _Bad(Exception):
    """A schema error in one line: the message and the key it is about (for the column)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


_STR, _BOOL, _NUM, _INT, _LIST, _OBJ = (str,), (bool,), (int, float), (int,), (list,), (dict,)
_TYPE_NAMES = {_STR: "text", _BOOL: "true or false", _NUM: "a number", _INT: "an integer", _LIST: "a list",
               _OBJ: "an object"}


def _get(obj: dict[str, Any], key: str, types: tuple[type, ...], optional: bool = False) -> Any:
    """`obj[key]` when it has one of `types` (null too when optional); _Bad otherwise."""
    value = obj.get(key)
    if value.__class__ in types:  # the usual case, fast: JSON gives exactly str, int, float, bool, list, dict
        return value
    return _get_checked(obj, key, types, optional)


def _get_checked(obj: dict[str, Any], key: str, types: tuple[type, ...], optional: bool) -> Any:
    if key not in obj:
        if optional:
            return None
        raise _Bad(f"missing field {key!r}")
    value = obj[key]
    if value is None and optional:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise _Bad(f"field {key!r} must be {_TYPE_NAMES[types]}{' or null' if optional else ''}", key)
    return value


def _time(obj: dict[str, Any], key: str, to_clock: Callable[[float], float], optional: bool = False) -> float | None:
    text = _get(obj, key, _STR, optional)
    if text is None:
        return None
    try:
        return to_clock(_wall(text))
    except ValueError:
        raise _Bad(f"field {key!r} is not an ISO 8601 time: {text!r}", key) from None


def _enum(obj: dict[str, Any], key: str, enum: type, optional: bool = False) -> Any:
    value = _get(obj, key, _STR, optional)
    if value is None:
        return None
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(m.value for m in enum)
        raise _Bad(f"field {key!r}: unknown value {value!r} (expected {allowed})", key) from None


def _options(obj: dict[str, Any]) -> tuple[Option, ...]:
    raw = _get(obj, "options", _LIST)
    options = []
    for item in raw:
        if not isinstance(item, dict):
            raise _Bad("every option must be an object", "options")
        options.append(Option(_get(item, "id", _STR), _get(item, "label", _STR),
                              _get(item, "description", _STR, True) or "", bool(_get(item, "recommended", _BOOL, True))))
    return tuple(options)


def _policy(obj: dict[str, Any], to_clock: Callable[[float], float]) -> TimeoutPolicy:
    raw = _get(obj, "policy", _OBJ)
    return TimeoutPolicy(
        deadline=_time(raw, "deadline", to_clock, optional=True),
        on_timeout=_enum(raw, "onTimeout", OnTimeout),
        option_id=_get(raw, "optionId", _STR, True),
        timeout_seconds=_get(raw, "timeoutSeconds", _NUM, True),
    )


class _Parser:
    """Builds StoreContents line by line; `open` maps an id to its latest unclosed escalation."""

    def __init__(self, to_clock: Callable[[float], float]) -> None:
        self.to_clock = to_clock
        self.contents = StoreContents()
        self.open: dict[str, EscalationRecord] = {}
        self.kinds = {"raised": self.raised, "resolved": self.resolved, "withdrawn": self.withdrawn,
                      "agent_escalation": self.agent, "run": self.run}

    def line(self, obj: Any) -> None:
        if not isinstance(obj, dict):
            raise _Bad("a store line must be a JSON object")
        version = _get(obj, "v", _INT)
        if version != SCHEMA_VERSION:
            newer = " (written by a newer escalate)" if version > SCHEMA_VERSION else ""
            raise _Bad(f"unknown schema version {version}{newer}; this escalate reads version {SCHEMA_VERSION}", "v")
        kind = _get(obj, "kind", _STR)
        handler = self.kinds.get(kind)
        if handler is None:
            raise _Bad(f"unknown kind {kind!r} (expected {', '.join(self.kinds)})", "kind")
        handler(obj, _time(obj, "at", self.to_clock))

    def raised(self, obj: dict[str, Any], at: float) -> None:
        esc = Escalation(
            id=_get(obj, "id", _STR), task_id=_get(obj, "taskId", _STR), run_id=_get(obj, "runId", _STR),
            agent=_get(obj, "agent", _STR), reason=Reason.parse(_get(obj, "reason", _STR)),
            question=_get(obj, "question", _STR), context=_get(obj, "context", _STR, True) or "",
            options=_options(obj), allow_agent_decision=bool(_get(obj, "allowAgentDecision", _BOOL, True)),
            timeout=_get(obj, "timeout", _NUM, True), origin=_enum(obj, "origin", Origin), created_at=at,
        )
        extra = _get(obj, "extra", _OBJ, True) or {}
        stored = EscalationRecord(PendingEscalation(esc, _policy(obj, self.to_clock), extra), earlier=True)
        self.contents.escalations.append(stored)
        self.open[esc.id] = stored

    def _closing(self, obj: dict[str, Any]) -> EscalationRecord:
        esc_id = _get(obj, "id", _STR)
        stored = self.open.pop(esc_id, None)
        if stored is None:
            raise _Bad(f"no open escalation {esc_id!r} before this line", "id")
        return stored

    def resolved(self, obj: dict[str, Any], at: float) -> None:
        stored = self._closing(obj)
        response = Response(
            _enum(obj, "responseType", ResponseType), _get(obj, "selectedOption", _STR, True),
            _get(obj, "textResponse", _STR, True), _get(obj, "additionalInstructions", _STR, True),
        )
        stored.decision = Decision(
            stored.pending.escalation.id, response, _enum(obj, "resolvedBy", ResolvedBy), at,
            _get(obj, "note", _STR, True) or "", bool(_get(obj, "stopsTask", _BOOL, True)),
        )

    def withdrawn(self, obj: dict[str, Any], at: float) -> None:
        self._closing(obj).withdrawn = True

    def agent(self, obj: dict[str, Any], at: float) -> None:
        self.contents.agent_entries.append(HistoryEntry(
            at, _get(obj, "source", _STR), _get(obj, "target", _STR), _get(obj, "approved", _BOOL),
            _get(obj, "reason", _STR), _get(obj, "task", _STR), getattr(_enum(obj, "denial", Denial, True), "value", None),
        ))

    def run(self, obj: dict[str, Any], at: float) -> None:
        self.contents.runs.append(StoredRun(
            _get(obj, "id", _STR), _get(obj, "task", _STR), _get(obj, "workflow", _STR), _get(obj, "flow", _STR, True),
            _get(obj, "input", _STR, True) or "", _get(obj, "status", _STR), _get(obj, "result", _STR, True),
            _get(obj, "error", _STR, True), _time(obj, "startedAt", self.to_clock), at,
        ))


def parse(text: str, filename: str, to_clock: Callable[[float], float]) -> StoreContents:
    """Complete lines of a store; blank lines are allowed. StoreError names the first bad one."""
    parser = _Parser(to_clock)
    decode = json.JSONDecoder().raw_decode  # without decode()'s whitespace regex: lines are written compact
    for number, line in enumerate(text.split("\n"), 1):
        try:
            obj, end = decode(line)
            if end != len(line) and line[end:].strip():
                raise json.JSONDecodeError("Extra data", line, end)
            parser.line(obj)
        except json.JSONDecodeError as exc:
            if not line.strip():
                continue  # blank lines are allowed
            raise StoreError(f"{filename}:{number}:{exc.colno}: error: not a JSON line: {exc.msg}") from None
        except _Bad as exc:
            col = line.find(f'"{exc.key}"') + 1 if exc.key else 0
            raise StoreError(f"{filename}:{number}:{max(col, 1)}: error: {exc}") from None
    return parser.contents
