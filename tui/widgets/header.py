"""The console's header: Textual's, except that a new title repaints one line.

Header's title updates lay out the whole screen (Static.update's default); the title changes
with every decision raised or answered ("escalate · N decisions waiting"), and its line never
changes size.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.visual import VisualType
from textual.widgets import Header
from textual.widgets._header import HeaderTitle


class _Title(HeaderTitle):
    def update(self, content: VisualType = "", *, layout: bool = False) -> None:
        super().update(content, layout=False)  # one line, whatever it says


class ConsoleHeader(Header):
    def compose(self) -> ComposeResult:
        for widget in super().compose():
            yield _Title() if isinstance(widget, HeaderTitle) else widget
