"""The event log of one run: agent calls, outputs, escalations and who decided."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import RichLog

from tui.format import event_line


class EventLog(RichLog):
    # RichLog's virtual size lays out the whole screen at every line written (20 times a second
    # with runs going). The log's own size never depends on its lines: a new line only moves
    # its scrollbar (which lays out by itself when it appears) and repaints the log.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0))

    def _watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)

    def __init__(self, *, id: str | None = None) -> None:
        # markup=False: agent output is written as Text, never parsed.
        super().__init__(id=id, wrap=True, markup=False, highlight=False, max_lines=2000, min_width=20)
        self.run_id: str | None = None
        self._shown = 0  # how many of the run's events are written

    def show_run(self, run_id: str | None, events: list[Any]) -> None:
        """Switch to another run: its whole log so far."""
        self.run_id = run_id
        self._shown = 0
        self.clear()
        self.border_title = f"Events · run {run_id}" if run_id else "Events"
        self.catch_up(events)

    def catch_up(self, events: list[Any]) -> None:
        """Write the run's events not written yet. The run's own list is the source of truth, so
        a switch and a batch of news overlapping never write an event twice."""
        for event in events[self._shown:]:
            stamp = Text(f"{str(getattr(event, 'time', ''))[11:19]} ", style="dim")
            self.write(stamp + event_line(event.type, dict(event.fields)))
        self._shown = len(events)
