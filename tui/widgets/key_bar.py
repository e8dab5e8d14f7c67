"""The key bar: the focused screen's key bindings on one line, clickable.

Textual's Footer mounts a widget per key and recomposes them all whenever the bindings change,
which is at every focus change: each time a decision takes the keyboard and gives it back, that
cost 20-50 ms of mounting and layout with runs going. This bar draws the same line as text, and
repaints only when the keys it shows change.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget


class KeyItem(NamedTuple):
    key: str  # what a click presses
    display: str  # how the key is shown
    description: str
    enabled: bool


class KeyBar(Widget, can_focus=False):
    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--description"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        .key-bar--key { color: $footer-key-foreground; background: $footer-key-background; text-style: bold; }
        .key-bar--description { color: $footer-description-foreground; background: $footer-description-background; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.items: tuple[KeyItem, ...] = ()
        self.palette: KeyItem | None = None  # the command palette's key, shown on the right
        self._spans: list[tuple[int, int, KeyItem]] = []  # cells each drawn item covers

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen) -> None:
        items: list[KeyItem] = []
        palette = None
        seen_actions: set[str] = set()
        app = self.app
        for _node, binding, enabled, _tooltip in screen.active_bindings.values():
            item = KeyItem(binding.key, app.get_key_display(binding), binding.description, enabled)
            if binding.key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                palette = item
            elif binding.show and binding.action not in seen_actions:  # one item per action, as Textual's footer
                seen_actions.add(binding.action)
                items.append(item)
        if (tuple(items), palette) != (self.items, self.palette):
            self.items, self.palette = tuple(items), palette
            self.refresh()

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        description_style = self.get_component_rich_style("key-bar--description")

        def label(item: KeyItem, lead: str = " ", words: int | None = None) -> Text:
            description = item.description if words is None else " ".join(item.description.split()[:words])
            if words == 0 and item.key in ("question_mark", "q"):
                description = item.description  # Help explains the others; Quit is how to leave
            text = Text.assemble((f"{lead}{item.display} ", key_style), (f"{description} " if description else "", description_style))
            if not item.enabled:
                text.stylize("dim")
            return text

        def assemble(items: tuple[KeyItem, ...], words: int | None) -> tuple[Text, list[tuple[int, int, KeyItem]]]:
            line = Text(no_wrap=True, overflow="ellipsis", end="")
            spans = []
            for item in items:
                start = line.cell_len
                line.append_text(label(item, words=words))
                spans.append((start, line.cell_len, item))
            return line, spans

        # On a narrow terminal: the descriptions shrink to their first word, the palette's key
        # goes (it is in the help), then the keys furthest right before Help and Quit, so that
        # every key shown keeps its label; only past that the labels go too.
        width = self.size.width
        palette_item = self.palette
        items = self.items
        for words in (None, 1):
            line, spans = assemble(items, words)
            if line.cell_len + (label(palette_item, lead="").cell_len + 1 if palette_item else 0) <= width:
                break
        else:
            palette_item = None
            kept = list(items)
            droppable = [i for i in kept if i.key not in ("question_mark", "q")]
            line, spans = assemble(tuple(kept), 1)
            while line.cell_len > width and droppable:
                kept.remove(droppable.pop())
                line, spans = assemble(tuple(kept), 1)
            if line.cell_len > width:
                line, spans = assemble(tuple(kept), 0)
        if palette_item is not None:
            palette = Text("▏", description_style) + label(palette_item, lead="")
            gap = width - line.cell_len - palette.cell_len
            if gap >= 0:  # on the right, where Textual's footer puts it, when there is room
                line.append(" " * gap)
                spans.append((line.cell_len, line.cell_len + palette.cell_len, palette_item))
                line.append_text(palette)
        self._spans = spans
        return line

    def on_click(self, event: events.Click) -> None:
        for start, end, item in self._spans:
            if start <= event.x < end:
                if item.enabled:
                    self.app.simulate_key(item.key)
                else:
                    self.app.bell()
                return
