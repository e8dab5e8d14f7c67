"""The console's history file (`escalate console --store PATH`): append-only JSON lines.

One line per fact, each a JSON object with the schema version `v`, its `kind` and `at` (ISO 8601
UTC, wall-clock time):

- `raised`: an escalation as it was asked (every field of it) and its timeout policy;
- `resolved`: its decision (the contract's `decision` event fields, plus the note);
- `withdrawn`: it was withdrawn with a cancelled run;
- `agent_escalation`: one seed 002 history entry (source, target, approved, reason, task, denial);
- `run`: a run that ended (id, task, workflow, flow, input, status, result summary, error, start).

Every line is one `os.write()` on a descriptor opened with O_APPEND, so a crash loses at most the
line being written and two consoles sharing a store never interleave lines. Escalation ids are
unique within one session only: a `resolved`/`withdrawn` line closes the latest open `raised`
line with that id. Times in memory follow the session's clock (monotonic, or fake in tests); the
store converts with the offset between wall time and that clock taken when it opens.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import weakref
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from engine.escalation.agent_policy import Denial, EscalationHistory, HistoryEntry
from engine.escalation.broker import RAISED, RESOLVED, BrokerEvent
from engine.escalation.clock import Clock
from engine.positions import byte_position
from engine.runtime.events import jsonable
from engine.escalation.model import (
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
INPUT_LIMIT = 4000  # characters of a run's input kept


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
    started_at: float  # session clock scale, like every time loaded
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


# ---- the open store ---------------------------------------------------------------------------


class HistoryStore:
    """An opened store file: `load()` reads what earlier sessions wrote (once, at most the bytes
    present at opening), the `write_*` methods append this session's facts from any thread."""

    def __init__(self, path: Path, fd: int, size: int, loadable: int, clock: Clock, wall_now: Callable[[], float]) -> None:
        self.path = path
        # Lines appended before `release()`: nothing is written to a store before it has been
        # read in full (a broken one stays exactly as it was).
        self._held: list[bytes] | None = []
        self.size = size  # bytes at opening: everything earlier sessions wrote
        self._loadable = loadable  # bytes up to the last newline (a torn last line is not loaded)
        self._fd: int | None = fd
        self._close_fd = weakref.finalize(self, os.close, fd)  # a store dropped unclosed still frees it
        self._lock = threading.Lock()
        self._clock = clock
        # wall = clock + offset: one offset per session, so every conversion agrees.
        self.offset = wall_now() - clock.now()

    @classmethod
    def open(cls, path: Path, clock: Clock, wall_now: Callable[[], float] | None = None) -> "HistoryStore":
        """Open (creating it and its folder when missing) for appending; StoreError when the path
        cannot be read or written. Cheap: nothing is parsed here."""
        import time

        path = Path(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"{path}: error: cannot open the store: {exc.strerror or exc}") from None
        try:
            size = os.fstat(fd).st_size
            loadable = _end_of_last_line(fd, size)
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"{path}: error: cannot read the store: {exc.strerror or exc}") from None
        return cls(path, fd, size, loadable, clock, wall_now or time.time)

    @property
    def torn(self) -> bool:
        """The file ends in a partial line (a crash mid-write): it is ignored, then cut off."""
        return self._loadable < self.size

    def to_wall(self, t: float) -> float:
        return t + self.offset

    def to_clock(self, wall: float) -> float:
        return wall - self.offset

    def release(self) -> None:
        """The store was read and is sound: write what was held, then write as facts happen."""
        with self._lock:
            held, self._held = self._held, None
            for data in held or ():
                self._write(data)

    def close(self) -> None:
        """Stop writing (lines still held are dropped: the store was never read successfully)."""
        with self._lock:
            self._fd, self._held = None, None
            self._close_fd()

    # -- loading ---------------------------------------------------------------------------

    def read_text(self) -> str:
        """The complete lines earlier sessions wrote (this session's appends are not included)."""
        with open(self.path, "rb") as f:
            data = f.read(self._loadable)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line, col = byte_position(data, exc.start)
            raise StoreError(f"{self.path}:{line}:{col}: error: not UTF-8 text") from None

    def load(self) -> StoreContents:
        """Every earlier fact, times on this session's clock; StoreError at the first bad line.
        Call `release()` after a successful load to start writing."""
        return parse(self.read_text(), str(self.path), self.to_clock)

    # -- appending -------------------------------------------------------------------------

    def _append(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:
            if self._held is not None:
                self._held.append(data)
            elif self._fd is not None:  # None: closed, the console is quitting
                self._write(data)

    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        if self.torn:
            self._cut_torn_line()
        os.write(self._fd, data)  # one write per line, O_APPEND: no buffer to flush

    def _cut_torn_line(self) -> None:
        """Before the first append, drop the partial line a crash left, so the new line starts
        fresh; only if nobody appended since we opened (then the tail is no longer ours)."""
        assert self._fd is not None
        if os.fstat(self._fd).st_size == self.size:
            os.ftruncate(self._fd, self._loadable)
        self.size = self._loadable

    def _line(self, kind: str, at: float) -> dict[str, Any]:
        return {"v": SCHEMA_VERSION, "kind": kind, "at": iso(self.to_wall(at))}

    def write_raised(self, pending: PendingEscalation) -> None:
        esc, policy = pending.escalation, pending.policy
        record = self._line("raised", esc.created_at)
        record.update(
            id=esc.id, taskId=esc.task_id, runId=esc.run_id, agent=esc.agent, reason=esc.reason.value,
            question=esc.question, context=esc.context,
            options=[{"id": o.id, "label": o.label, "description": o.description, "recommended": o.recommended}
                     for o in esc.options],
            allowAgentDecision=esc.allow_agent_decision, timeout=esc.timeout, origin=esc.origin.value,
            policy={
                "deadline": None if policy.deadline is None else iso(self.to_wall(policy.deadline)),
                "onTimeout": policy.on_timeout.value, "optionId": policy.option_id,
                "timeoutSeconds": policy.timeout_seconds,
            },
            extra=jsonable(pending.extra),
        )
        self._append(record)

    def write_resolved(self, decision: Decision) -> None:
        record = self._line("resolved", decision.resolved_at)
        record.update(decision.to_event_fields(), note=decision.note, stopsTask=decision.stops_task)
        self._append(record)

    def write_withdrawn(self, escalation_id: str) -> None:
        record = self._line("withdrawn", self._clock.now())
        record["id"] = escalation_id
        self._append(record)

    def write_agent_entry(self, entry: HistoryEntry) -> None:
        record = self._line("agent_escalation", entry.timestamp)
        record.update(source=entry.source, target=entry.target, approved=entry.approved, reason=entry.reason,
                      task=entry.task, denial=entry.denial)
        self._append(record)

    def write_run(self, run: Any) -> None:
        """A finished RunHandle (its times are on the session's clock, like the escalations')."""
        record = {"v": SCHEMA_VERSION, "kind": "run", "at": iso(self.to_wall(run.finished_at))}
        record.update(
            id=run.id, task=run.task, workflow=run.workflow, flow=run.flow, input=_cut(str(run.input), INPUT_LIMIT),
            status=getattr(run.status, "value", str(run.status)), result=summary(run.result), error=run.error,
            startedAt=iso(self.to_wall(run.started_at)),
        )
        self._append(record)


def summary(value: Any) -> str | None:
    """A run's result as stored: text as it is, any other value as JSON, cut to SUMMARY_LIMIT."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(jsonable(value), ensure_ascii=False)
    return _cut(text, SUMMARY_LIMIT)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _end_of_last_line(fd: int, size: int) -> int:
    """Bytes up to and including the last newline (reads backwards from the end, a block at a time)."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


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


# ---- recording a session ----------------------------------------------------------------------


class StoreRecorder:
    """Writes one session's facts into a store as they happen. Its callbacks are called on
    whatever thread the broker or the runs use: each is a few dict lookups and one write."""

    def __init__(self, store: HistoryStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._history: EscalationHistory | None = None
        self._cursor = 0  # entries of `_history` already in the store (earlier ones count as stored)

    def on_broker(self, event: BrokerEvent) -> None:
        if event.kind == RAISED:
            self.store.write_raised(event.pending)
        elif event.kind == RESOLVED and event.decision is not None:
            self.store.write_resolved(event.decision)
        else:  # cancelled: withdrawn with its run
            self.store.write_withdrawn(event.pending.escalation.id)

    def follow(self, engine: Any) -> Callable[[], None]:
        """Record the engine's finished runs and its agent policy's new history entries."""
        with self._lock:
            self._history = engine.agent_policy.history
            self._cursor = len(self._history)
        runs = engine.runs

        def on_event(event: Any) -> None:
            if event.type == "agent_escalation":
                self._drain()
            elif event.type == "flow_result" or (event.type == "log" and event.fields.get("level") == "error"):
                # A run's last event comes just before its status is set: record it one loop turn later.
                handle = next((h for h in reversed(runs) if h.id == event.run_id), None)
                if handle is not None:
                    _later(lambda: self.store.write_run(handle))

        return engine.subscribe(on_event)

    def seed(self, history: EscalationHistory, entries: list[HistoryEntry]) -> None:
        """Earlier sessions' entries go before this session's in `history` (already stored)."""
        with self._lock:
            added = history.add_earlier(entries)
            if history is self._history:
                self._cursor += added

    def _drain(self) -> None:
        with self._lock:
            if self._history is None:
                return
            new = self._history.entries_since(self._cursor)
            self._cursor += len(new)
            for entry in new:
                self.store.write_agent_entry(entry)


def _later(callback: Callable[[], None]) -> None:
    try:
        asyncio.get_running_loop().call_soon(callback)
    except RuntimeError:  # not on a loop: nothing is left to wait for
        callback()
