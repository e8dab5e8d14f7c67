"""RowTable: keys, clicks, selection, and what a change re-renders (counted through its strip cache)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from tui.widgets.row_table import Column, RowTable

COLUMNS = (Column("id", 4, "id"), Column("what", 10, "what", flex=True), Column("n", 3, "n"))


class TableApp(App[None]):
    CSS = "RowTable { height: 8; width: 40; }"  # 7 rows under the header

    def __init__(self, rows: int = 20, **kw) -> None:
        super().__init__()
        self.rows = rows
        self.kw = kw
        self.highlighted: list[str] = []
        self.selected: list[str] = []

    def compose(self) -> ComposeResult:
        yield RowTable(COLUMNS, show_header=True, **self.kw)

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        for i in range(self.rows):
            table.add_row(f"k{i}", (f"{i}", f"row {i}", Text(str(i * 10), style="bold")))
        table.focus()

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        self.highlighted.append(event.key)

    def on_row_table_selected(self, event: RowTable.Selected) -> None:
        self.selected.append(event.key)


def line(table: RowTable, y: int) -> str:
    return table.render_line(y).text


async def test_keys_move_the_cursor_and_enter_selects() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(RowTable)
        await pilot.pause()
        assert table.cursor_key == "k0" and app.highlighted == ["k0"]
        await pilot.press("down", "down")
        assert table.cursor_key == "k2"
        await pilot.press("up")
        assert table.cursor_key == "k1"
        await pilot.press("end")
        assert table.cursor_key == "k19"
        assert table.scroll_y == 20 - 7  # the cursor row is scrolled into view, at the bottom
        await pilot.press("home")
        assert table.cursor_key == "k0" and table.scroll_y == 0
        await pilot.press("pagedown")
        assert table.cursor_row == 6  # a page is the visible rows less one, for context
        await pilot.press("pageup")
        assert table.cursor_row == 0
        await pilot.press("up")  # stays on the first row
        assert table.cursor_row == 0
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.selected == ["k1"]
        assert app.highlighted == ["k0", "k1", "k2", "k1", "k19", "k0", "k6", "k0", "k1"]


async def test_a_click_selects_the_row_under_the_mouse() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(RowTable)
        await pilot.press("down")
        await pilot.click(RowTable, offset=(5, 4))  # line 4 = header + rows 0..2, so row 3
        await pilot.pause()
        assert table.cursor_key == "k3" and app.selected == ["k3"]
        await pilot.click(RowTable, offset=(5, 0))  # the header selects nothing
        await pilot.pause()
        assert app.selected == ["k3"]


async def test_cells_are_plain_text_cut_to_fixed_columns() -> None:
    app = TableApp(rows=0)
    async with app.run_test() as pilot:
        table = app.query_one(RowTable)
        table.add_row("a", ("[b]x[/b]", "a question much longer than the column", "12345"))
        table.add_row("b", ("line\nbreak", "tab\there", ""))
        await pilot.pause()
        # 40 wide: " id   what(flex: 40 - 4 - 3 - 4 gaps = 29) n  "
        assert line(table, 0) == " id   what                          n   "
        assert line(table, 1) == " [b]… a question much longer than … 12… "
        assert line(table, 2) == " lin… tab here                          "
        assert table.row_count == 2 and table.get_row_index("b") == 1


async def test_an_update_re_renders_only_its_row() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(RowTable)
        await pilot.pause()
        before = table.rows_rendered
        assert before == 7  # the visible rows, once each
        cached = {key: dict(strips) for key, strips in table._strips.items()}
        table.update_cell("k3", "what", "changed")
        assert "k3" not in table._strips  # its strips are dropped, the others kept as they were
        assert all(table._strips[k] == cached[k] for k in cached if k != "k3")
        await pilot.pause()
        assert table.rows_rendered == before + 1
        assert "changed" in line(table, 4)
        table.update_cell("k3", "what", "changed")  # the same content: nothing to draw
        table.update_row("k18", ("18", "off screen", "0"))  # not visible: drawn when scrolled to
        await pilot.pause()
        assert table.rows_rendered == before + 1


async def test_cursor_moves_and_removals_reuse_the_rendered_rows() -> None:
    app = TableApp()
    async with app.run_test() as pilot:
        table = app.query_one(RowTable)
        await pilot.pause()
        before = table.rows_rendered
        await pilot.press("down")
        await pilot.pause()
        assert table.rows_rendered == before + 2  # k0 without the cursor, k1 with it
        table.remove_row("k5")  # below the cursor: rows slide up, one new row comes into view
        await pilot.pause()
        assert table.rows_rendered == before + 3
        assert [line(table, y).split()[0] for y in range(1, 8)] == ["0", "1", "2", "3", "4", "6", "7"]
        table.remove_row("k0")  # above the cursor: it stays on its row
        await pilot.pause()
        assert table.cursor_key == "k1" and table.cursor_row == 0
        table.remove_row("k1")  # the cursor's row: the next row takes the cursor
        await pilot.pause()
        assert table.cursor_key == "k2" and app.highlighted[-1] == "k2"


async def test_zebra_stripes_and_the_cursor_change_the_row_style() -> None:
    app = TableApp(rows=3, zebra_stripes=True)
    async with app.run_test() as pilot:
        table = app.query_one(RowTable)
        await pilot.pause()
        plain = table.get_visual_style().rich_style.bgcolor
        stripe = table.get_visual_style("row-table--stripe").rich_style.bgcolor
        cursor = table.get_visual_style("row-table--cursor").rich_style.bgcolor
        assert len({plain, stripe, cursor}) == 3

        def background(y: int):
            return table.render_line(y)._segments[-1].style.bgcolor

        assert [background(y) for y in (1, 2, 3)] == [cursor, plain, stripe]
        table.clear()
        await pilot.pause()
        assert table.row_count == 0 and table.cursor_key is None


async def test_remove_rows_removes_many_at_once_and_keeps_the_cursor_on_its_row() -> None:
    from textual.app import App

    from tui.widgets.row_table import Column, RowTable

    class Host(App[None]):
        def compose(self):
            yield RowTable([Column("name", 10, flex=True)], id="t")

    app = Host()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        for n in range(6):
            table.add_row(f"k{n}", [f"row {n}"])
        table.move_cursor(row=4)
        table.remove_rows(["k0", "k2", "missing", "k3"])
        await pilot.pause()
        assert table.row_keys == ["k1", "k4", "k5"] and table.cursor_key == "k4"
        table.remove_rows(["k4", "k5"])  # the cursor's row goes: the one in its place gets it
        assert table.row_keys == ["k1"] and table.cursor_key == "k1"
        table.remove_rows(["k1"])
        assert table.row_count == 0 and table.cursor_row is None


async def test_rows_added_together_are_made_when_drawn_and_a_duplicate_adds_none() -> None:
    app = TableApp(rows=0)
    made: list[int] = []

    def maker(i: int):  # type: ignore[no-untyped-def]
        def cells() -> tuple[str, str, str]:
            made.append(i)
            return (f"{i}", f"lazy {i}", "")
        return cells

    async with app.run_test() as pilot:
        table = app.query_one(RowTable)
        table.add_rows((f"k{i}", maker(i)) for i in range(1000))
        await pilot.pause()
        assert table.row_count == 1000 and table.cursor_key == "k0"
        assert sorted(made) == list(range(7)), made  # the 7 rows on screen, nothing else
        assert table.visible_keys == [f"k{i}" for i in range(7)]
        assert "lazy 500" in table.get_cell("k500", "what").plain and 500 in made  # read: made then
        try:
            table.add_rows([("new1", ("a", "b", "c")), ("k3", ("d", "e", "f"))])
        except KeyError:
            pass
        else:
            raise AssertionError("a duplicate key was added")
        assert "new1" not in table and table.row_count == 1000
