"""The event log of one run: agent calls, outputs, escalations and who decided.

A line-API widget of its own rather than Textual's RichLog: RichLog imports rich.pretty, which
imports attrs (~17 ms before the first frame), for pretty-printing we never use. Lines are Rich
`Text` (agent output is never parsed as markup), wrapped to the log's width and wrapped again
when that width changes.

The runs shown lately keep their wrapped lines (`RECENT_RUNS`): with many agents asking at
once, the pane switches the log to another run at every answer, and formatting and wrapping
that run's whole log again was most of the console's work between the key and the frame
(tests/benchmarks/bench_acp.py --console --agents 20).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
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
from tui.widgets.steady_scrollbars import SteadyScrollbars

MAX_EVENTS = 2000  # events kept per log; older ones leave from the top
MIN_WIDTH = 20  # narrower than this, lines scroll sideways instead of wrapping to nothing
RECENT_RUNS = 64  # runs whose wrapped lines are kept for the next time they are shown


@dataclass
class _Written:
    """One run's log as written: its texts, and their lines wrapped to `width`."""

    shown: int = 0  # how many of the run's events are written
    texts: deque[Text] = field(default_factory=lambda: deque(maxlen=MAX_EVENTS))
    heights: deque[int] = field(default_factory=deque)  # screen lines of each text, to drop the oldest
    lines: list[Strip] = field(default_factory=list)
    width: int = 0
    noted: bool = False  # holds a line that is not an event (written again when shown again)


class EventLog(SteadyScrollbars, ScrollView, can_focus=True):
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
        self._log = _Written()  # the shown run's
        self._width = 0  # 0 until the log has a size: texts written before wait for it
        self._recent: OrderedDict[str, _Written] = OrderedDict()  # runs shown before, newest last
        self._style: Style | None = None  # the log's style while a frame renders it

    @property
    def lines(self) -> list[Strip]:
        """The shown run's texts wrapped to the log's width."""
        return self._log.lines

    def show_run(self, run_id: str | None, events: list[Any]) -> None:
        """Switch to another run: its whole log so far, following its end."""
        if self.run_id is not None and not self._log.noted:
            self._recent[self.run_id] = self._log
            self._recent.move_to_end(self.run_id)
            while len(self._recent) > RECENT_RUNS:
                self._recent.popitem(last=False)
        self.run_id = run_id
        recent = self._recent.pop(run_id, None) if run_id is not None else None
        # Kept only while the events given still begin with those it wrote.
        self._log = recent if recent is not None and recent.shown <= len(events) else _Written()
        if self._log.width != self._width:
            self._rewrap()
        self.border_title = f"Events · run {run_id}" if run_id else "Events"
        self._write(events)
        self._resized(following=True)  # a run shown follows its end
        self.refresh()

    def catch_up(self, events: list[Any]) -> None:
        """Write the run's events not written yet. The run's own list is the source of truth, so
        a switch and a batch of news overlapping never write an event twice."""
        if self._log.shown >= len(events):
            return
        following = self._at_end()
        self._write(events)
        self._resized(following)
        self.refresh()

    def _write(self, events: list[Any]) -> None:
        for event in events[self._log.shown:]:
            stamp = Text(f"{str(getattr(event, 'time', ''))[11:19]} ", style="dim")
            self._add(stamp + event_line(event.type, dict(event.fields)))
        self._log.shown = max(self._log.shown, len(events))

    def note(self, text: Text) -> None:
        """A line that is not one of the run's events (how a failed run ended, and its fix):
        it stays in the log, where a toast would fade."""
        following = self._at_end()
        self._add(text)
        self._log.noted = True
        self._resized(following)
        self.refresh()

    def _add(self, text: Text) -> None:
        text.expand_tabs()
        log = self._log
        if len(log.texts) == MAX_EVENTS:
            del log.lines[: log.heights.popleft()]
        log.texts.append(text)
        strips = self._wrap(text) if self._width else []
        log.heights.append(len(strips))
        log.lines.extend(strips)

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
        self._rewrap()
        self._resized(following)
        self.refresh()

    def _rewrap(self) -> None:
        """The shown run's texts wrapped again, to the log's width."""
        log = self._log
        wrapped = [self._wrap(text) for text in log.texts] if self._width else [[] for _ in log.texts]
        log.heights = deque(len(strips) for strips in wrapped)
        log.lines = [strip for strips in wrapped for strip in strips]
        log.width = self._width

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
