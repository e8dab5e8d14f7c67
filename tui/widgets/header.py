"""The console's header: the command palette's icon on the left, the title in the middle, the
status of the waiting decisions on the right (the oldest's age), on every screen.

One widget drawing one line, where Textual's Header is four widgets with as many stylesheets
(~10 ms of the first frame) and lays the screen out at each title change. The title changes
with every decision raised or answered ("escalate · N decisions waiting").
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widget import Widget

ICON = "⭘"
ICON_CELLS = 8  # the icon's place on the left, padding included (as Textual's header)
RIGHT_CELLS = 10  # Textual's header keeps its clock's place on the right: the title is centred between
STATUS_TICK = 1.0  # seconds: the oldest decision's age moves


class ConsoleHeader(Widget):
    DEFAULT_CSS = """
    ConsoleHeader {
        dock: top;
        width: 100%;
        height: 1;
        background: $panel;
        color: $foreground;
    }
    """

    status = ""  # e.g. "oldest 3:07" (EscalateApp.decision_status)

    def on_mount(self) -> None:
        self.watch(self.app, "title", self._retitle, init=False)
        self.watch(self.app, "sub_title", self._retitle, init=False)
        self.tick()
        self.set_interval(STATUS_TICK, self.tick)

    def _retitle(self) -> None:
        self.tick()
        self.refresh()  # one line, whatever it says: no layout

    def tick(self) -> None:
        status = getattr(self.app, "decision_status", str)()
        if status != self.status:
            self.status = status
            self.refresh()

    def render(self) -> Text:
        title = Text(self.app.title, no_wrap=True, overflow="ellipsis", end="")
        if self.app.sub_title:
            title.append(f" — {self.app.sub_title}", style="dim")
        right = max(RIGHT_CELLS, len(self.status) + 2)
        middle = max(0, self.size.width - ICON_CELLS - right)
        title.truncate(middle, overflow="ellipsis")
        title.align("center", middle)
        line = Text(f" {ICON}".ljust(ICON_CELLS), no_wrap=True, end="")
        status = Text(self.status.rjust(right - 1) + " ", style="bold yellow", no_wrap=True, end="")
        return line + title + status

    async def on_click(self, event: events.Click) -> None:
        if event.x < ICON_CELLS:
            event.stop()
            await self.run_action("app.command_palette")
