"""Outside agents' sessions waiting on their person (Claude Code's Notification: its permission
dialog, an idle prompt), told in the console as they happen.

The hook records an `attention` event in the session's run and sends the news `attention <run>`
(engine/outside/core.py `note_attention`). The news is a hint to look, like every message: the
run's row must be an outside agent's session, and what is told is read from its events. A
message lost (a full socket queue) is not told live; the event stays in the run's log.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable

from engine.durable.askers import is_outside
from engine.outside.core import ATTENTION

RUN_ID_MAX = 64  # escalate_runs.run_id


@dataclass(frozen=True)
class Note:
    """One session waiting on its person, as recorded (the text as given: shown made visible)."""

    run_id: str
    task: str
    agent: str
    message: str
    title: str


class AttentionWatch:
    """Hears `attention` news on `db` and calls `tell(note)` on the loop for each attention event
    recorded since the last one told (on the first news of a run: its newest)."""

    def __init__(self, db: Any, tell: Callable[[Note], None]) -> None:
        self.db = db
        self.tell = tell
        self._seen: dict[str, int] = {}  # run id -> events of that run read so far
        self._heard: dict[str, None] = {}
        self._reading = False
        self._stop: Callable[[], None] | None = None

    def start(self) -> None:
        """Listen (call on the console's loop)."""
        loop = asyncio.get_running_loop()

        def heard(message: str) -> None:  # on the listening thread
            kind, _, run_id = message.partition("\n")[0].partition(" ")
            if kind == ATTENTION and 0 < len(run_id) <= RUN_ID_MAX:
                try:
                    loop.call_soon_threadsafe(self._hear, run_id)
                except RuntimeError:  # the loop closed: the console is quitting
                    pass

        self._stop = self.db.signals.listen(heard)

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None

    def _hear(self, run_id: str) -> None:
        self._heard[run_id] = None
        if not self._reading:
            self._reading = True
            asyncio.get_running_loop().create_task(self._read(), name="escalate attention")

    async def _read(self) -> None:
        """The runs heard of, in batches: what each recorded since."""
        try:
            while self._heard:
                run_ids, self._heard = list(self._heard), {}
                for run_id in run_ids:
                    try:
                        notes = await asyncio.to_thread(self._new_notes, run_id)
                    except Exception:  # a busy or broken database: the event stays in the run's log
                        continue
                    for note in notes:
                        self.tell(note)
        finally:
            self._reading = False

    def _new_notes(self, run_id: str) -> list[Note]:
        row = self.db.get_run(run_id)
        if row is None or not is_outside(row):  # news names anything: only a session's own events count
            return []
        events = self.db.events_of(run_id)
        first = run_id not in self._seen
        fresh = events[self._seen.get(run_id, 0):]
        self._seen[run_id] = len(events)
        notes = [_note(row, event) for event in fresh if event.get("type") == ATTENTION]
        return notes[-1:] if first else notes


def _note(row: dict[str, Any], event: dict[str, Any]) -> Note:
    def text(name: str) -> str:
        value = event.get(name)
        return value if isinstance(value, str) else ""

    return Note(str(row["run_id"]), str(row.get("task") or ""), text("agent") or str(row.get("workflow") or ""),
                text("message"), text("title"))
