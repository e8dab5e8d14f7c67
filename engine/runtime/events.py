"""Run events: what a run reports while it executes (the contract's `--events` JSONL lines).

One `RunEvent` per happening; an `EventSink` per run keeps them, hands them to subscribers (the
engine, the console) and optionally appends them to a JSONL file as they happen.

The events file is the user's to choose, so it can be anything: `escalate run` checks at start
that it can be opened for appending and takes a write (`prepare_events_file`: a usage error
otherwise), and a write that fails later (a full disk, a reader that went away) never ends the
run: the sink says so once, as a `log` warning, and writes no more events to the file.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TextIO

from engine.kernel.jsonable import jsonable

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


@dataclass
class RunEvent:
    """One line of `--events` JSONL: `{"type", "time", **fields}` (plus `run_id` in memory)."""

    run_id: str
    type: str
    time: str
    fields: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "time": self.time, **jsonable(self.fields)}


def open_for_append(path: Path) -> TextIO:
    """Open `path` for appending text without ever blocking on the open: a FIFO that nobody
    reads is an error (ENXIO), not a hang. Raises OSError, e.g. for /proc/self/mem, which
    cannot be positioned at its end."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(exc.errno, "a FIFO that no process is reading", str(path)) from None
        raise
    try:
        os.set_blocking(fd, True)  # writes wait for a slow reader, as they would for a file
        return open(fd, "a", encoding="utf-8")  # seeks to the end: fails where appending cannot work
    except BaseException:
        os.close(fd)
        raise


def prepare_events_file(path: Path) -> None:
    """Check at start that `path` takes appended events, and empty it if it is a regular file
    (this run's events only). Raises OSError naming why not."""
    with open_for_append(path) as f:
        fd = f.fileno()
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        # A write, as the events will make: a device that refuses them (/dev/full) refuses even
        # an empty one; a regular file (a full disk, a quota) takes a byte, removed at once.
        os.write(fd, b"\n" if regular else b"")
        if regular:
            f.truncate(0)


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
        self._path = events_file
        self._file: TextIO | None = None  # opened at the first event
        self._record = record
        self._replayed = replayed
        self._seq = 0
        self._shift = 0  # live-only events recorded while the replay's events were still dropped

    def subscribe(self, callback: Callable[[RunEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def emit(self, type_: str, **fields: Any) -> RunEvent:
        event = RunEvent(self.run_id, type_, utc_now_iso(), fields)
        self._seq += 1
        if self._seq <= self._replayed:
            return event
        return self._deliver(event, self._seq + self._shift)

    def emit_live(self, type_: str, **fields: Any) -> RunEvent:
        """An event that only a live execution emits, never its replay (an ACP agent started again
        after a crash): kept even while a continued run's replayed events are still dropped,
        after every recorded one, without shifting the replay's count (which a step that was
        under way at the crash would otherwise make swallow it)."""
        if self._seq >= self._replayed:
            return self.emit(type_, **fields)
        self._shift += 1
        return self._deliver(RunEvent(self.run_id, type_, utc_now_iso(), fields), self._replayed + self._shift)

    def _deliver(self, event: RunEvent, seq: int) -> RunEvent:
        if self._record is not None:
            try:
                self._record(seq, event)
            except Exception:  # the log is not worth a run: the database may be busy
                log.exception("event not recorded")
        self.events.append(event)
        failure = self._write(event) if self._path is not None else None
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:  # a broken subscriber (UI) must not kill the run
                log.exception("event subscriber failed")
        if failure is not None:  # after this event's subscribers, so the warning comes second
            self.emit("log", message=failure, level="warning")
        return event

    def _write(self, event: RunEvent) -> str | None:
        """Append one line; on failure stop writing for good and return the one-line reason."""
        assert self._path is not None
        try:
            if self._file is None:
                self._file = open_for_append(self._path)
            self._file.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
            self._file.flush()
            return None
        except OSError as exc:
            path, self._path = self._path, None  # no more attempts, so the reason is told once
            self.close()
            return f"events file {path}: cannot write: {exc.strerror or exc}; no more events are written to it"

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError:  # its last buffered line could not be written either
                pass
