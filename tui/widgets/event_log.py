"""The event log of one run: agent calls, outputs, escalations and who decided.

A line-API widget of its own rather than Textual's RichLog: RichLog imports rich.pretty, which
imports attrs (~17 ms before the first frame), for pretty-printing we never use. Lines are Rich
`Text` (agent output is never parsed as markup), wrapped to the log's width and wrapped again
when that width changes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Resize
from textual.geometry import Region, Size
from textual.reactive import Reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.format import event_line

MAX_EVENTS = 2000  # events kept per log; older ones leave from the top
MIN_WIDTH = 20  # narrower than this, lines scroll sideways instead of wrapping to nothing


class EventLog(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    EventLog {
        background: $surface;
        color: $foreground;
        overflow-y: scroll;
        &:focus {
            background-tint: $foreground 5%;
        }
    }
    """

    # ScrollView's virtual size lays out the whole screen at every change (20 times a second
    # with runs going). The log's own size never depends on its lines: a new line only moves
    # its scrollbar and repaints the log. Textual has no public call for that: `_scroll_update`
    # (private) is what its layout calls; 0.03-0.07 ms against 0.4-1.0 ms for a layout of the
    # main screen (tests/benchmarks/bench_private_attrs.py).
    virtual_size: Reactive[Size] = Reactive(Size(0, 0))

    def _watch_virtual_size(self, size: Size) -> None:
        self._scroll_update(size)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id: str | None = None
        self._shown = 0  # how many of the run's events are written
        self._texts: deque[Text] = deque(maxlen=MAX_EVENTS)
        self._heights: deque[int] = deque()  # screen lines of each text, to drop the oldest
        self.lines: list[Strip] = []  # the texts wrapped to `_width`
        self._width = 0  # 0 until the log has a size: texts written before wait for it
        self._style: Style | None = None  # the log's style while a frame renders it

    def show_run(self, run_id: str | None, events: list[Any]) -> None:
        """Switch to another run: its whole log so far."""
        self.run_id = run_id
        self._shown = 0
        self._texts.clear()
        self._heights.clear()
        self.lines = []
        self._resized()  # empty: back to the top, so the new run's log follows its end
        self.border_title = f"Events · run {run_id}" if run_id else "Events"
        self.catch_up(events)
        self.refresh()

    def catch_up(self, events: list[Any]) -> None:
        """Write the run's events not written yet. The run's own list is the source of truth, so
        a switch and a batch of news overlapping never write an event twice."""
        if self._shown >= len(events):
            return
        following = self._at_end()
        for event in events[self._shown:]:
            stamp = Text(f"{str(getattr(event, 'time', ''))[11:19]} ", style="dim")
            self._add(stamp + event_line(event.type, dict(event.fields)))
        self._shown = len(events)
        self._resized(following)
        self.refresh()

    def note(self, text: Text) -> None:
        """A line that is not one of the run's events (how a failed run ended, and its fix):
        it stays in the log, where a toast would fade."""
        following = self._at_end()
        self._add(text)
        self._resized(following)
        self.refresh()

    def _add(self, text: Text) -> None:
        text.expand_tabs()
        if len(self._texts) == MAX_EVENTS:
            del self.lines[: self._heights.popleft()]
        self._texts.append(text)
        strips = self._wrap(text) if self._width else []
        self._heights.append(len(strips))
        self.lines.extend(strips)

    def _wrap(self, text: Text) -> list[Strip]:
        console = self.app.console
        options = console.options.update_width(self._width)
        return Strip.from_lines(list(Segment.split_lines(console.render(text, options))))

    def _at_end(self) -> bool:
        return self.scroll_y >= self.max_scroll_y

    def _resized(self, following: bool = False) -> None:
        """The virtual size after the lines changed; a log that was at its end stays there (one
        the user scrolled up stays where it is)."""
        self.virtual_size = Size(self._width, len(self.lines))
        if following:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def on_resize(self, _: Resize) -> None:
        width = max(self.scrollable_content_region.width, MIN_WIDTH)
        if width == self._width:
            return
        following = self._at_end()
        self._width = width
        wrapped = [self._wrap(text) for text in self._texts]
        self._heights = deque(len(strips) for strips in wrapped)
        self.lines = [strip for strips in wrapped for strip in strips]
        self._resized(following)
        self.refresh()

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width  # lines wrap to whatever width the log is given

    def render_lines(self, crop: Region) -> list[Strip]:
        # The log's style, once per frame: `rich_style` walks the ancestors' styles, and per line
        # (21 of them, repainted whenever a line arrives) it was the log's largest cost.
        self._style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._style = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        style = self.rich_style if self._style is None else self._style  # outside a frame: a test reading a line
        index = scroll_y + y
        if index >= len(self.lines):
            return Strip.blank(width, style)
        return self.lines[index].crop_extend(scroll_x, scroll_x + width, style).apply_style(style)
