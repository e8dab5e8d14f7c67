"""The runs of this session with live status, elapsed time and the model tokens they used."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from engine.kernel.clock import Clock
from tui.format import duration, event_line, one_line, status_text, token_count
from tui.widgets.row_table import Column, RowTable

# Run ids are 9 characters (durable) or `r<n>-<hex6>` (11 from the 100th run); on a narrow
# terminal `latest` goes first, then `tokens`, `elapsed` and `workflow`: the run and its status stay.
_COLUMNS = (
    Column("run", 11, "run"),
    Column("workflow", 16, "workflow", drop=4),
    Column("status", 15, "status"),
    Column("elapsed", 7, "elapsed", drop=3),
    Column("tokens", 6, "tokens", drop=2),
    Column("latest", 12, "latest", flex=True, drop=1),
)


class RunList(RowTable):
    def __init__(self, clock: Clock, *, id: str | None = None) -> None:
        super().__init__(_COLUMNS, show_header=True, zebra_stripes=True, id=id)
        self._clock = clock  # the engine's: a run's times are on it
        self._runs: dict[str, Any] = {}
        self._latest: dict[str, str] = {}
        self._drawn_status: dict[str, str] = {}

    @property
    def selected_run_id(self) -> str | None:
        return self.cursor_key

    def add_run(self, handle: Any) -> None:
        self._runs[handle.id] = handle
        status = _status(handle)
        self._drawn_status[handle.id] = status
        self.add_row(handle.id, self._row_for(handle, status))

    def note_event(self, run_id: str, event_type: str, fields: dict[str, Any]) -> None:
        """A run's newest event. Only a status change is drawn at once (each drawn change is a
        frame, and busy runs report many events a second): "latest" and "elapsed" follow in
        `tick()`, once a second."""
        if run_id not in self._runs:
            return
        self._latest[run_id] = one_line(event_line(event_type, fields).plain, 40)  # as the event log words it
        self.note_status(run_id)

    def note_status(self, run_id: str) -> None:
        """Redraw a run's row if its status is not the one drawn (a decision raised: "waiting"
        goes in the frame that shows the pane, not in one of its own when the next event comes)."""
        if run_id in self._runs and _status(self._runs[run_id]) != self._drawn_status.get(run_id):
            self.refresh_run(run_id)

    def refresh_run(self, run_id: str) -> None:
        """Redraw one run's row now (status, elapsed, latest event)."""
        handle = self._runs[run_id]
        status = _status(handle)
        self._drawn_status[run_id] = status
        self.update_row(run_id, self._row_for(handle, status))

    def tick(self) -> None:
        """Elapsed times move with the clock (only for unfinished runs)."""
        for run_id, handle in self._runs.items():
            if handle.finished_at is None:
                self.refresh_run(run_id)

    def _row_for(self, handle: Any, status: str) -> tuple[Text, ...]:
        label = one_line(handle.workflow + (f" · {handle.flow}" if handle.flow else ""), 100)
        return (Text(handle.id), Text(label), status_text(status), Text(self._elapsed(handle)),
                Text(token_count(handle.tokens)), Text(self._latest.get(handle.id, ""), style="dim"))

    def _elapsed(self, handle: Any) -> str:
        end = handle.finished_at if handle.finished_at is not None else self._clock.now()
        return duration(end - handle.started_at)


def _status(handle: Any) -> str:
    status = handle.status
    return getattr(status, "value", str(status))
