"""The runs of this session with live status and elapsed time."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.widgets import DataTable

from tui.format import duration, one_line, status_text

# Fixed widths: a cell update never re-measures the table (runs report many events a second).
_COLUMNS = (("run", 9), ("workflow", 18), ("status", 15), ("elapsed", 7), ("latest", 28))


class RunList(DataTable):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._runs: dict[str, Any] = {}
        self._latest: dict[str, str] = {}
        self._drawn_status: dict[str, str] = {}

    def on_mount(self) -> None:
        for name, width in _COLUMNS:
            self.add_column(name, key=name, width=width)

    @property
    def selected_run_id(self) -> str | None:
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def add_run(self, handle: Any) -> None:
        self._runs[handle.id] = handle
        label = handle.workflow + (f" · {handle.flow}" if handle.flow else "")
        self.add_row(Text(handle.id), Text(label), status_text(_status(handle)),
                     Text(self._elapsed(handle)), Text(""), key=handle.id)

    def note_event(self, run_id: str, event_type: str, fields: dict[str, Any]) -> None:
        """A run's newest event. Only a status change is drawn at once: every cell update repaints
        the table, so the "latest" and "elapsed" columns are drawn by `tick()`, once a second."""
        if run_id not in self._runs:
            return
        self._latest[run_id] = one_line(f"{event_type} {fields.get('agent') or fields.get('agent_name') or ''}", 40)
        if _status(self._runs[run_id]) != self._drawn_status.get(run_id):
            self.refresh_run(run_id)

    def refresh_run(self, run_id: str) -> None:
        """Redraw one run's row now (status, elapsed, latest event)."""
        handle = self._runs[run_id]
        status = _status(handle)
        self._drawn_status[run_id] = status
        self.update_cell(run_id, "status", status_text(status))
        self.update_cell(run_id, "elapsed", Text(self._elapsed(handle)))
        self.update_cell(run_id, "latest", Text(self._latest.get(run_id, ""), style="dim"))

    def tick(self) -> None:
        """Elapsed times move with the clock (only for unfinished runs)."""
        for run_id, handle in self._runs.items():
            if handle.finished_at is None:
                self.refresh_run(run_id)

    def _elapsed(self, handle: Any) -> str:
        # RunHandle times are wall-clock (time.time()), not the escalation clock.
        end = handle.finished_at if handle.finished_at is not None else time.time()
        return duration(end - handle.started_at)


def _status(handle: Any) -> str:
    status = handle.status
    return getattr(status, "value", str(status))
