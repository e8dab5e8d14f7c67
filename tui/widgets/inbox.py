"""The inbox: every pending decision across all runs, oldest first, with its age."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engine.escalation.clock import Clock
from engine.escalation.model import PendingEscalation
from tui.format import duration, one_line

INBOX_QUESTION_WIDTH = 40  # fits the left column of an 100-column terminal


def inbox_prompt(pending: PendingEscalation, now: float, current: bool) -> Text:
    """Two short lines: age, task and reason; then the question, cut to fit."""
    esc = pending.escalation
    line = Text("▶ " if current else "  ", style="bold yellow")
    line.append(f"{duration(now - esc.created_at):>5} ", style="dim")
    line.append(esc.task_id, style="bold")
    line.append(f" · {esc.reason.value}\n", style="yellow")
    line.append(f"  {one_line(esc.question, INBOX_QUESTION_WIDTH)}")
    return line


class Inbox(OptionList):
    """Selecting an entry (Enter or click) shows it in the decision pane."""

    def __init__(self, clock: Clock, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)
        self._clock = clock
        self._shown: list[PendingEscalation] = []
        self._current: str | None = None

    def show(self, pending: list[PendingEscalation], current: str | None) -> None:
        """Redraw the list; keeps the user's highlight on the same escalation when it remains."""
        highlighted = self.highlighted_option.id if self.highlighted_option is not None else None
        self._shown = list(pending)
        self._current = current
        now = self._clock.now()
        self.clear_options()
        self.add_options(
            Option(inbox_prompt(p, now, p.escalation.id == current), id=p.escalation.id) for p in pending
        )
        ids = [p.escalation.id for p in pending]
        target = highlighted if highlighted in ids else current
        if target in ids:
            self.highlighted = ids.index(target)
        self.border_title = f"Inbox ({len(pending)})"

    def refresh_ages(self) -> None:
        """Ages move with the clock: rewrite the prompts in place (no rebuild, no flicker)."""
        now = self._clock.now()
        for p in self._shown:
            self.replace_option_prompt(p.escalation.id, inbox_prompt(p, now, p.escalation.id == self._current))
