"""The console's header: the command palette's icon on the left, the title in the middle.

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

    def on_mount(self) -> None:
        self.watch(self.app, "title", self._retitle, init=False)
        self.watch(self.app, "sub_title", self._retitle, init=False)

    def _retitle(self) -> None:
        self.refresh()  # one line, whatever it says: no layout

    def render(self) -> Text:
        title = Text(self.app.title, no_wrap=True, overflow="ellipsis", end="")
        if self.app.sub_title:
            title.append(f" — {self.app.sub_title}", style="dim")
        middle = max(0, self.size.width - ICON_CELLS - RIGHT_CELLS)
        title.truncate(middle, overflow="ellipsis")
        title.align("center", middle)
        line = Text(f" {ICON}".ljust(ICON_CELLS), no_wrap=True, end="")
        return line + title

    async def on_click(self, event: events.Click) -> None:
        if event.x < ICON_CELLS:
            event.stop()
            await self.run_action("app.command_palette")
