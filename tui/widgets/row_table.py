"""A fast list of one-line rows in fixed columns, keyed by id (Textual's line API).

Why not DataTable: its render cache keys include an update counter, so removing one row,
updating one cell or moving the cursor re-renders every visible row through Rich (about a
millisecond a row). Here each row is rendered once to a `Strip`, cached per (row, width, style of
its state), so a change costs only the rows it touches: an update re-renders that row, a cursor
move the two rows it leaves and enters, a removal nothing but the line refresh of the rows that
slide up (their strips are reused). Column widths are fixed (one column may take the width left
over): nothing is ever measured. The widget's height never depends on its rows (unless its CSS
height is `auto`), so a row added or removed repaints lines instead of laying out the screen.

Cells are `rich.text.Text` (or plain `str`), never markup: agent text is shown as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable, Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tui.widgets.steady_scrollbars import SteadyScrollbars

Cell = Text | str
# A row's cells, or a call that makes them when the row is first drawn or read: a table given
# 10,000 rows at once makes only those on screen.
Cells = Iterable[Cell] | Callable[[], Iterable[Cell]]


@dataclass(frozen=True)
class Column:
    key: str
    width: int  # cells; for the flex column, its minimum
    label: str = ""  # shown in the header row, if the table has one
    flex: bool = False  # takes the width the fixed columns leave
    drop: int = 0  # on a narrow table, the order in which columns are hidden: 1 first (0: always shown)


class RowTable(SteadyScrollbars, ScrollView, can_focus=True):
    """Rows keyed by id, one cursor row; Enter or a click selects it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("enter", "select", "Select", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-table--header",
        "row-table--stripe",
        "row-table--cursor",
    }

    # The colours DataTable uses, so the console keeps its look.
    DEFAULT_CSS = """
    RowTable {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;
        overflow-y: auto;
        &:focus {
            background-tint: $foreground 5%;
            & > .row-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
        }
        & > .row-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .row-table--stripe {
            background: $surface-darken-1 40%;
        }
        & > .row-table--cursor {
            background: $block-cursor-blurred-background;
        }
    }
    """

    class _RowMessage(Message):
        def __init__(self, table: RowTable, key: str, index: int) -> None:
            super().__init__()
            self.table = table
            self.key = key
            self.index = index

        @property
        def control(self) -> RowTable:
            return self.table

    class Highlighted(_RowMessage):
        """The cursor is on another row (also when a removal moved another row under it)."""

    class Selected(_RowMessage):
        """Enter on the cursor row, or a click on a row."""

    def __init__(
        self,
        columns: Sequence[Column],
        *,
        show_header: bool = False,
        zebra_stripes: bool = False,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.columns = tuple(columns)
        self._column_index = {c.key: i for i, c in enumerate(self.columns)}
        self.show_header = show_header
        self.zebra_stripes = zebra_stripes
        self._cells: dict[str, tuple[Text, ...] | Callable[[], Iterable[Cell]]] = {}  # key -> cells (or their maker)
        self._order: list[str] = []
        self._index: dict[str, int] | None = {}  # key -> position; None: rebuild on use
        self._cursor: int | None = None
        # Rendered rows: key -> {(width, style of the row's state): strip}. An entry lives until
        # its row changes or the table is resized; a style change (focus) picks other keys.
        self._strips: dict[str, dict[tuple[int, Style, Style | None], Strip]] = {}
        self.rows_rendered = 0  # how many row strips were built (for tests and benchmarks)

    # ---- rows ----------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def row_keys(self) -> list[str]:
        return list(self._order)

    def __contains__(self, key: object) -> bool:
        return key in self._cells

    @property
    def visible_keys(self) -> list[str]:
        """The keys of the rows on screen now."""
        top = int(self.scroll_y)
        return self._order[top:top + self._visible_rows()]

    def get_row(self, key: str) -> tuple[Text, ...]:
        cells = self._cells[key]
        if isinstance(cells, tuple):
            return cells
        made = self._cells[key] = self._as_cells(cells())
        return made

    def get_cell(self, key: str, column: str) -> Text:
        return self.get_row(key)[self._column_index[column]]

    def get_row_index(self, key: str) -> int:
        if self._index is None:
            self._index = {k: i for i, k in enumerate(self._order)}
        return self._index[key]

    def add_row(self, key: str, cells: Cells) -> None:
        """Append a row (keys are unique: adding a present key raises KeyError)."""
        self.add_rows([(key, cells)])

    def add_rows(self, rows: Iterable[tuple[str, Cells]]) -> None:
        """Append rows: one new height and one repaint for them all (a console opening on
        10,000 pending decisions: the height and scrollbar once, not 10,000 times)."""
        new: dict[str, tuple[Text, ...] | Callable[[], Iterable[Cell]]] = {}
        for key, cells in rows:  # all checked before any is added: a bad row adds none
            if key in self._cells or key in new:
                raise KeyError(f"duplicate row key {key!r}")
            new[key] = cells if callable(cells) else self._as_cells(cells)
        if not new:
            return
        first = len(self._order)
        self._cells.update(new)
        self._order.extend(new)
        if self._index is not None:
            self._index.update((key, first + i) for i, key in enumerate(new))
        self._rows_changed()
        self._refresh_rows(first, len(self._order))
        if self._cursor is None:
            self._set_cursor(0)

    def update_row(self, key: str, cells: Iterable[Cell]) -> None:
        self._replace(key, self._as_cells(cells))

    def update_cell(self, key: str, column: str, cell: Cell) -> None:
        cells = list(self.get_row(key))
        cells[self._column_index[column]] = _text(cell)
        self._replace(key, tuple(cells))

    def remove_row(self, key: str) -> None:
        index = self.get_row_index(key)
        del self._cells[key]
        self._strips.pop(key, None)
        self._order.pop(index)
        self._index = None
        self._rows_changed()
        self._refresh_rows(index, len(self._order) + 1)  # the rows below slide up one line
        cursor = self._cursor
        if cursor is None:
            return
        if not self._order:
            self._cursor = None
        elif cursor > index:
            self._cursor = cursor - 1  # same row, one line up (already in the refreshed range)
        elif cursor == index:  # the cursor's row went: the row that took its place gets it
            self._cursor = None
            self._set_cursor(min(index, len(self._order) - 1))

    def remove_rows(self, keys: Iterable[str]) -> None:
        """Several rows at once (a batch decided): one layout and one repaint, not one each."""
        gone = [key for key in keys if key in self._cells]
        if len(gone) <= 1:
            for key in gone:
                self.remove_row(key)
            return
        first = min(self.get_row_index(key) for key in gone)
        kept_cursor = self.cursor_key
        for key in gone:
            del self._cells[key]
            self._strips.pop(key, None)
        self._order = [key for key in self._order if key in self._cells]
        self._index = None
        self._rows_changed()
        self._refresh_rows(first, len(self._order) + len(gone))
        if self._cursor is None:
            return
        if not self._order:
            self._cursor = None
        elif kept_cursor in self._cells:
            self._cursor = self.get_row_index(kept_cursor)  # same row, moved up (already refreshed)
        else:  # the cursor's row went: the row that took its place gets it
            self._cursor = None
            self._set_cursor(min(first, len(self._order) - 1))

    def clear(self) -> None:
        self._cells.clear()
        self._order.clear()
        self._index = {}
        self._strips.clear()
        self._cursor = None
        self._rows_changed()
        self.refresh()

    def _replace(self, key: str, cells: tuple[Text, ...]) -> None:
        if self.get_row(key) == cells:
            return  # same content (an age that did not change): nothing to draw
        self._cells[key] = cells
        self._strips.pop(key, None)
        index = self.get_row_index(key)
        self._refresh_rows(index, index + 1)

    def _as_cells(self, cells: Iterable[Cell]) -> tuple[Text, ...]:
        row = tuple(_text(c) for c in cells)
        if len(row) != len(self.columns):
            raise ValueError(f"{len(row)} cells for {len(self.columns)} columns")
        return row

    # ---- the cursor ----------------------------------------------------------------------------

    @property
    def cursor_row(self) -> int | None:
        return self._cursor

    @property
    def cursor_key(self) -> str | None:
        return None if self._cursor is None else self._order[self._cursor]

    def move_cursor(self, *, row: int) -> None:
        if self._order:
            self._set_cursor(max(0, min(row, len(self._order) - 1)))

    def _set_cursor(self, index: int) -> None:
        old = self._cursor
        if index == old:
            return
        self._cursor = index
        if old is not None:
            self._refresh_rows(old, old + 1)
        self._refresh_rows(index, index + 1)
        self._scroll_to_row(index)
        self.post_message(self.Highlighted(self, self._order[index], index))

    def action_cursor_up(self) -> None:
        if self._cursor is not None:
            self.move_cursor(row=self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=0 if self._cursor is None else self._cursor + 1)

    def action_first(self) -> None:
        self.move_cursor(row=0)

    def action_last(self) -> None:
        self.move_cursor(row=len(self._order) - 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=(self._cursor or 0) - max(1, self._visible_rows() - 1))

    def action_page_down(self) -> None:
        self.move_cursor(row=(self._cursor or 0) + max(1, self._visible_rows() - 1))

    def action_select(self) -> None:
        if self._cursor is not None:
            self.post_message(self.Selected(self, self._order[self._cursor], self._cursor))

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        index = int(self.scroll_y) + offset.y - self._header_lines
        if offset.y >= self._header_lines and 0 <= index < len(self._order):
            self._set_cursor(index)
            self.action_select()

    # ---- geometry ------------------------------------------------------------------------------

    @property
    def _header_lines(self) -> int:
        return 1 if self.show_header else 0

    def _visible_rows(self) -> int:
        return max(0, self.scrollable_content_region.height - self._header_lines)

    def _scroll_to_row(self, index: int) -> None:
        top = int(self.scroll_y)
        visible = self._visible_rows()
        if not visible:
            return
        if index < top:
            self.scroll_to(y=index, animate=False, force=True)
        elif index >= top + visible:
            self.scroll_to(y=index - visible + 1, animate=False, force=True)

    def _rows_changed(self) -> None:
        """The number of rows changed: a new virtual height, without a layout of the screen
        (unless the scrollbar appears or goes, or the height follows the content)."""
        size = Size(0, len(self._order) + self._header_lines)
        if self.styles.height is not None and self.styles.height.is_auto:
            self.virtual_size = size  # a layout reactive: the table grows with its rows
        elif size != self.virtual_size:
            self.set_reactive(RowTable.virtual_size, size)
            # Textual's private scrollbar update (no public call does it): 0.03-0.07 ms against
            # 0.4-1.0 ms for a layout of the main screen (tests/benchmarks/bench_private_attrs.py);
            # toggling the scrollbar lays out, by itself.
            self._scroll_update(size)

    def _refresh_rows(self, start: int, end: int) -> None:
        """Repaint the lines of rows start..end-1 that are on screen."""
        top = int(self.scroll_y)
        start, end = max(start, top), min(end, top + self._visible_rows())
        if start < end:
            self.refresh_lines(start + self._header_lines, end - start)

    def _on_resize(self, _: events.Resize) -> None:
        """Drop the strips of other widths (the first frame may already be drawn at this one)."""
        width = self.scrollable_content_region.width
        for key, strips in self._strips.items():
            self._strips[key] = {k: strip for k, strip in strips.items() if k[0] == width}

    def on_mount(self) -> None:
        self._rows_changed()

    # ---- rendering -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.get_visual_style().rich_style
        if self.show_header:
            if y == 0:
                header = base + self.get_visual_style("row-table--header").rich_style
                return self._build(tuple(Text(c.label) for c in self.columns), width, header, None)
            y -= 1
        index = int(self.scroll_y) + y
        if index >= len(self._order):
            return Strip.blank(width, base)
        key = self._order[index]
        post: Style | None = None
        if index == self._cursor:
            cursor = self.get_visual_style("row-table--cursor").rich_style
            # Focused, the cursor's colours win; blurred, the cells keep theirs.
            post = cursor if self.has_focus else Style(bgcolor=cursor.bgcolor)
        elif self.zebra_stripes and index % 2 == 0:
            base = self.get_visual_style("row-table--stripe").rich_style
        cache = self._strips.setdefault(key, {})
        strip = cache.get((width, base, post))
        if strip is None:
            strip = cache[width, base, post] = self._build(self.get_row(key), width, base, post)
            self.rows_rendered += 1
        return strip

    def _build(self, cells: tuple[Text, ...], width: int, base: Style, post: Style | None) -> Strip:
        """One row: a leading space, each cell cut or padded to its column, a space between."""
        widths = self._column_widths(width)
        console = self.app.console
        segments: list[Segment] = [Segment(" ")]
        for cell, cell_width in zip(cells, widths):
            if not cell_width:
                continue  # a column the width cannot hold
            text = cell.copy()
            text.truncate(cell_width, overflow="ellipsis", pad=True)
            # Text.render leaves the Text's own style out when it has no spans: apply it here.
            segments.extend(Segment.apply_style(text.render(console), console.get_style(text.style)))
            segments.append(Segment(" "))
        strip = Strip(Segment.apply_style(segments, base, post))
        return strip.crop_extend(0, width, base if post is None else base + post)

    def _column_widths(self, width: int) -> list[int]:
        """Each column's width (0: hidden). Columns that do not fit go in their `drop` order;
        the width left over goes to the flex column, or to the last one shown."""
        shown = list(range(len(self.columns)))

        def needed() -> int:
            return sum(self.columns[i].width for i in shown) + len(shown) + 1

        for index in sorted((i for i, c in enumerate(self.columns) if c.drop), key=lambda i: self.columns[i].drop):
            if needed() <= width:
                break
            shown.remove(index)
        widths = [self.columns[i].width if i in shown else 0 for i in range(len(self.columns))]
        if shown:
            grows = next((i for i in shown if self.columns[i].flex), shown[-1])
            widths[grows] += max(0, width - needed())
        return widths


def _text(cell: Cell) -> Text:
    """A cell as one line of plain text (a row is one line; a tab has no width of its own)."""
    text = cell if isinstance(cell, Text) else Text(cell)
    if "\n" in text.plain or "\t" in text.plain:
        text = text.copy()
        text.plain = text.plain.replace("\n", " ").replace("\t", " ")
    return text
