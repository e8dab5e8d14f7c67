"""The inbox: every pending decision across all runs, oldest first, with its age.

A RowTable updated row by row: with hundreds of pending decisions, one arriving or being
answered costs one row, not a rebuild of the list. The decision the pane shows is marked with
`▸`: moving the mark re-renders the two rows it leaves and enters, nothing else.
"""

from __future__ import annotations

from functools import partial

from rich.text import Text

from engine.kernel.clock import Clock
from engine.kernel.model import PendingEscalation
from tui.format import duration, one_line
from tui.widgets.row_table import Column, RowTable

# Fixed widths (the inbox is narrow): the question takes what is left.
# On a narrow terminal the question goes first (the pane shows it), then the task.
_COLUMNS = (Column("mark", 1), Column("age", 6), Column("task", 14, drop=2), Column("question", 12, flex=True, drop=1))
_MARK = Text("▸", style="bold yellow")


def _age(pending: PendingEscalation, now: float) -> Text:
    return Text(duration(now - pending.escalation.created_at), style="dim")


def inbox_cells(pending: PendingEscalation, now: float, marked: bool = False) -> tuple[Text, ...]:
    esc = pending.escalation
    return (
        _MARK if marked else Text(""),
        _age(pending, now),
        Text(one_line(esc.task_id, 40), style="bold"),
        Text(one_line(esc.question, 200)),
    )


class Inbox(RowTable):
    """Enter (or a click) on a row shows that decision in the pane."""

    def __init__(self, clock: Clock, *, id: str | None = None) -> None:
        super().__init__(_COLUMNS, id=id)
        self._clock = clock
        self._shown: dict[str, PendingEscalation] = {}  # escalation id -> pending, in queue order
        self._marked: str | None = None
        self.border_title = "Inbox (0)"

    def show(self, pending: list[PendingEscalation], current: str | None = None) -> None:
        """Apply the difference with what is shown: removed rows, new rows, the mark on `current`."""
        wanted = {p.escalation.id for p in pending}
        gone = [i for i in self._shown if i not in wanted]
        self.remove_rows(gone)  # a batch decided: one repaint
        for esc_id in gone:
            del self._shown[esc_id]
        if self._marked not in wanted:
            self._marked = None
        new = [p for p in pending if p.escalation.id not in self._shown]  # the broker keeps raise order: new ones come last
        # Each row's cells are made when it is first drawn (10,000 listed: those on screen).
        self.add_rows((p.escalation.id, partial(self._cells_now, p)) for p in new)
        self._shown.update((p.escalation.id, p) for p in new)
        self.mark(current)
        title = f"Inbox ({len(pending)})"
        if self.border_title != title:
            self.border_title = title

    def _cells_now(self, pending: PendingEscalation) -> tuple[Text, ...]:
        return inbox_cells(pending, self._clock.now(), pending.escalation.id == self._marked)

    def mark(self, escalation_id: str | None) -> None:
        """Mark the decision the pane shows (two rows change, at most)."""
        if escalation_id not in self._shown:
            escalation_id = None
        if escalation_id == self._marked:
            return
        if self._marked is not None:
            self.update_cell(self._marked, "mark", "")
        if escalation_id is not None:
            self.update_cell(escalation_id, "mark", _MARK)
        self._marked = escalation_id

    def refresh_ages(self) -> None:
        """Ages move with the clock: those on screen are brought up to date (each second, and
        as rows scroll into view; with 10,000 pending, all of them were 0.1-0.2 s a second); a
        row whose age text is unchanged is not drawn again."""
        now = self._clock.now()
        for esc_id in self.visible_keys:
            self.update_cell(esc_id, "age", _age(self._shown[esc_id], now))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.refresh_ages()
