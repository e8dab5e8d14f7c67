"""Run events: what a run reports while it executes (the contract's `--events` JSONL lines).

One `RunEvent` per happening; an `EventSink` per run keeps them, hands them to subscribers (the
engine, the console) and optionally appends them to a JSONL file as they happen.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TextIO

log = logging.getLogger("escalate.runtime")

# The contract's event types, for reference and checks in tests.
EVENT_TYPES = (
    "agent_call",
    "agent_result",
    "escalation",
    "human_escalation",
    "decision",
    "tool_call",
    "agent_escalation",
    "log",
    "flow_result",
)


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def jsonable(value: Any) -> Any:
    """Event fields hold agent output and flow values: anything not JSON becomes its text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


@dataclass
class RunEvent:
    """One line of `--events` JSONL: `{"type", "time", **fields}` (plus `run_id` in memory)."""

    run_id: str
    type: str
    time: str
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "time": self.time, **jsonable(self.fields)}


class EventSink:
    """Collects one run's events; subscribers are called synchronously, in order."""

    def __init__(
        self,
        run_id: str,
        events_file: Path | None = None,
        *,
        record: Callable[[int, RunEvent], None] | None = None,
        replayed: int = 0,
    ) -> None:
        """`record(seq, event)` keeps each event in the database; `replayed`: how many events a
        continued durable run already recorded, which its replay emits again and which are
        therefore dropped here (they were written, shown and handed out the first time)."""
        self.run_id = run_id
        self.events: list[RunEvent] = []
        self._subscribers: list[Callable[[RunEvent], None]] = []
        self._file: TextIO | None = open(events_file, "a", encoding="utf-8") if events_file else None
        self._record = record
        self._replayed = replayed
        self._seq = 0

    def subscribe(self, callback: Callable[[RunEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def emit(self, type_: str, **fields: Any) -> RunEvent:
        event = RunEvent(self.run_id, type_, utc_now_iso(), fields)
        self._seq += 1
        if self._seq <= self._replayed:
            return event
        if self._record is not None:
            try:
                self._record(self._seq, event)
            except Exception:  # the log is not worth a run: the database may be busy
                log.exception("event not recorded")
        self.events.append(event)
        if self._file is not None:
            self._file.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
            self._file.flush()
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # a broken subscriber (UI) must not kill the run
                log.exception("event subscriber failed")
        return event

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
