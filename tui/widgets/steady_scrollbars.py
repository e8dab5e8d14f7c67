"""Scrollbars that are drawn again only when what they show changed.

Textual's `ScrollView._size_updated`, which every layout of the screen calls for every widget,
compares the virtual size the layout gives a ScrollView (its region) with the widget's own
(its lines): they always differ, so each layout redraws every scrolling list's scrollbar, and
the console lays the screen out each time the decision pane appears or goes (with 20 ACP agents,
one key in two). Measured (tests/benchmarks/bench_acp.py --console --agents 20, lines drawn
anew between a key and its screen): 89-98 a key before, 78-85 with this (the scrollbars: 34-41
before, 22-29 with this, what remains being the Events panel's switch to another run and the
workflow list's focus changes); one agent, every key a layout: 93-99 before, 85-90 with this.
There is no public hook for it: this overrides Textual's private one (and `_scroll_update`, to
know what the scrollbars show), and calls it whenever anything it reads changed.
"""

from __future__ import annotations

from typing import Any

from textual.geometry import Size


class SteadyScrollbars:
    """Put first among a ScrollView's bases: its layout passes leave its scrollbars alone when
    its size, its container and its overflow are those of the last pass and its scrollbars
    already show its virtual size (a widget that updates them itself as its lines change, as the
    Events panel and the lists do, is not drawn again by the next layout). Not a widget itself,
    so Textual's CSS and component classes still come from the ScrollView after it (Textual
    follows a class's first widget base)."""

    _steady: tuple[Any, ...] | None = None  # size, container, gutter and overflow of the last pass
    _scrollbars_show: Size | None = None  # the virtual size the scrollbars were last updated for

    def _size_updated(self: Any, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        styles = self.styles
        seen = (size, container_size, styles.gutter.totals, styles.overflow_x, styles.overflow_y)
        if (seen == self._steady and self.virtual_size == self._scrollbars_show and size == self.outer_size
                and container_size == self.container_size):
            return False  # what Textual would do again: the same scrollbars, redrawn
        self._steady = seen
        return super()._size_updated(size, virtual_size, container_size, layout)  # type: ignore[misc]

    def _scroll_update(self: Any, virtual_size: Size) -> None:
        self._scrollbars_show = virtual_size
        super()._scroll_update(virtual_size)  # type: ignore[misc]
