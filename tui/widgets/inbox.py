"""The inbox: every pending decision across all runs, oldest first, with its age.

A DataTable updated row by row: with hundreds of pending decisions, one arriving or being
answered costs one row, not a rebuild of the list (an OptionList re-measured every entry).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from engine.escalation.clock import Clock
from engine.escalation.model import PendingEscalation
from tui.format import duration, one_line

def inbox_cells(pending: PendingEscalation, now: float) -> tuple[Text, ...]:
    esc = pending.escalation
    return (
        Text(duration(now - esc.created_at), style="dim"),
        Text(one_line(esc.task_id, 20), style="bold"),
        Text(one_line(esc.question, 48)),
        Text(esc.reason.value, style="yellow"),
    )


class Inbox(DataTable):
    """Enter (or a click) on a row shows that decision in the pane. Which one the pane shows is
    not marked here: marking it would repaint the whole table on every `[`/`]`."""

    def __init__(self, clock: Clock, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", show_header=False)
        self._clock = clock
        self._shown: dict[str, PendingEscalation] = {}  # escalation id -> pending, in queue order

    def on_mount(self) -> None:
        for key in ("age", "task", "question", "reason"):
            self.add_column(key, key=key)
        self.border_title = "Inbox (0)"

    def show(self, pending: list[PendingEscalation]) -> None:
        """Apply the difference with what is shown: removed rows, new rows, the current mark."""
        wanted = {p.escalation.id for p in pending}
        for gone in [i for i in self._shown if i not in wanted]:
            self.remove_row(gone)
            del self._shown[gone]
        now = self._clock.now()
        for p in pending:  # the broker keeps raise order, so new ones come last
            esc_id = p.escalation.id
            if esc_id not in self._shown:
                self.add_row(*inbox_cells(p, now), key=esc_id)
                self._shown[esc_id] = p
        self.border_title = f"Inbox ({len(pending)})"

    def refresh_ages(self) -> None:
        now = self._clock.now()
        for esc_id, p in self._shown.items():
            self.update_cell(esc_id, "age", Text(duration(now - p.escalation.created_at), style="dim"))
