"""Scrollbars that are drawn again only when what they show changed.

Textual's `ScrollView._size_updated`, which every layout of the screen calls for every widget,
compares the virtual size the layout gives a ScrollView (its region) with the widget's own
(its lines): they always differ, so each layout redraws every scrolling list's scrollbar, and
the console lays the screen out each time the decision pane appears or goes (with 20 ACP agents,
one key in two). Measured (tests/benchmarks/bench_acp.py --console --agents 20, lines drawn
anew per key): the run list's, the Events panel's and the workflow list's scrollbars were 47 of
the 95 lines a key drew; 14 without this. There is no public hook for it: this overrides
Textual's private one, and calls it whenever anything it reads changed.
"""

from __future__ import annotations

from typing import Any

from textual.geometry import Size


class SteadyScrollbars:
    """Put first among a ScrollView's bases: its layout passes leave its scrollbars alone when
    its size, its container, its own virtual size and its overflow are those of the last pass.
    Not a widget itself, so Textual's CSS and component classes still come from the
    ScrollView after it (Textual follows a class's first widget base)."""

    _steady: tuple[Any, ...] | None = None  # what the last pass that updated the scrollbars saw

    def _size_updated(self: Any, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        styles = self.styles
        seen = (size, container_size, self.virtual_size, styles.gutter.totals, styles.overflow_x, styles.overflow_y)
        if seen == self._steady and size == self.outer_size and container_size == self.container_size:
            return False  # what Textual would do again: the same scrollbars, redrawn
        self._steady = seen
        return super()._size_updated(size, virtual_size, container_size, layout)  # type: ignore[misc]
