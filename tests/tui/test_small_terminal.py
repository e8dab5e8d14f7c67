"""The console at 80x24 (issue 16): the key bar keeps its labels, tables hide the columns that do
not fit instead of cutting every one, run ids are whole, the history's ages move, its filter
matches field by field, and an escalation can be opened in full."""

from __future__ import annotations

from textual.widgets import Input

from engine.kernel.model import Option, Response, ResponseType
from tests.tui.helpers import ask, make_app, make_session, pending, settle
from tui.screens.help import HELP
from tui.screens.history import HistoryScreen, record_matches
from tui.screens.record_detail import RecordDetail
from tui.widgets.key_bar import KeyBar
from tui.widgets.row_table import Column, RowTable

SMALL = (80, 24)


def _keybar_words(app) -> str:
    return app.screen.query_one(KeyBar).render().plain


async def test_the_key_bar_keeps_labels_at_80_columns() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SMALL) as pilot:
        ask(session, pending(session.clock))
        await settle(pilot)
        line = _keybar_words(app)
        assert len(line) <= 80
        # Each key shown keeps its word; the rest (d, which the pane already has) is in the help.
        for shown in ("i Instructions", "esc Hide", "a Allow", "n Deny", "s Start", "c Cancel", "? Help", "q Quit"):
            assert shown in line, line
        assert " h " not in line or "h History" in line


def test_columns_that_do_not_fit_step_aside_in_their_order() -> None:
    table = RowTable((Column("a", 10), Column("b", 10, drop=2), Column("c", 10, drop=1), Column("d", 5, flex=True, drop=3)))
    assert table._column_widths(60) == [10, 10, 10, 25]  # room: the flex column takes the rest
    assert table._column_widths(38) == [10, 10, 0, 14]  # `c` goes first
    assert table._column_widths(25) == [10, 0, 0, 12]
    assert table._column_widths(12) == [10, 0, 0, 0]  # never `a`: cut at the edge if need be


async def test_runs_show_whole_ids_workflow_and_status_at_80_columns() -> None:
    from tui.widgets.run_list import RunList

    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SMALL) as pilot:
        runs = app.main.query_one(RunList)
        widths = runs._column_widths(runs.scrollable_content_region.width)
        shown = [c.key for c, w in zip(runs.columns, widths) if w]
        assert shown[:3] == ["run", "workflow", "status"]
        assert widths[0] >= len("r100-abcdef")


async def test_history_ages_move_filters_match_one_field_and_a_row_opens_in_full() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SMALL) as pilot:
        long_question = "Rotate the signing keys now? " + "It touches every service. " * 8
        a = pending(session.clock, task="deploy", question=long_question, context="keys are 2 years old",
                    options=(Option("now", "Rotate now", recommended=True), Option("later", "Next week")))
        ask(session, a)
        await settle(pilot)
        session.answer(a.escalation.id, Response(ResponseType.OPTION, "now", additional_instructions="one service at a time"))
        await pilot.press("h")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#history-table", RowTable)
        assert str(table.get_cell(a.escalation.id, "asked")) == "0s ago"
        session.clock.advance(75)
        screen._refresh_ages()  # what its 1 s timer does
        assert str(table.get_cell(a.escalation.id, "asked")) == "1:15 ago"
        record = screen._rows[a.escalation.id]
        assert record_matches(record, "2 years", "", "")  # context is searched, as the help says
        assert record_matches(record, "one service", "", "")  # and the outcome
        assert not record_matches(record, "deploy planner", "", "")  # never across two fields
        table.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RecordDetail)
        text = str(app.screen.query_one("#record-text").render())
        assert long_question.strip() in " ".join(text.split()) or "It touches every service." in text
        assert "Rotate now" in text and "one service at a time" in text and "keys are 2 years old" in text
        await pilot.press("escape")
        assert isinstance(app.screen, HistoryScreen)
        assert screen.query_one("#history-filter-text", Input).placeholder == "/ filter: any text"


def test_help_lists_every_key() -> None:
    for key in ("Tab", "Escape (on the choices)", "`d`", "`/`", "Enter on a row", "`y` quits", "`[` / `]`", "`i`",
                "`c`", "`h`", "`s`", "ctrl+p", "PgUp"):
        assert key in HELP, key
