"""Moving around: the inbox, the queue keys, the history's filters, the command palette."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.widgets import Input

import tui.screens.main
from engine.kernel.model import Reason, Response, ResponseType
from tests.tui.helpers import SIZE, ask, decided, demo_console, make_app, make_session, pending, settle, wait_until
from tui.widgets.row_table import RowTable
from tui.screens.start_run import RunRequest, StartRunScreen
from tui.widgets.decision_pane import DecisionPane
from tui.widgets.event_log import EventLog


async def test_queue_keys_and_inbox_choose_which_decision_is_answered() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        tasks = [ask(session, pending(session.clock, run_id=f"r{i}", task=f"task{i}")) for i in range(3)]
        await settle(pilot)
        pane = app.main.query_one(DecisionPane)
        assert pane.pending.escalation.task_id == "task0"
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert pane.pending.escalation.task_id == "task2"
        await pilot.press("right_square_bracket")  # wraps around
        assert pane.pending.escalation.task_id == "task0"
        await pilot.press("left_square_bracket")
        assert pane.pending.escalation.task_id == "task2"
        await pilot.press("2")  # answers exactly the one on screen
        assert (await decided(tasks[2])).response.selected_option == "opt2"
        assert not tasks[0].done() and not tasks[1].done()
        # the inbox: pick the second remaining row (task1) and answer it
        inbox = app.main.query_one("#inbox")
        inbox.focus()
        await pilot.press("down", "enter")
        assert pane.pending.escalation.task_id == "task1"
        assert app.focused is pane.query_one("#pane-choices")
        await pilot.press("1")
        assert (await decided(tasks[1])).response.selected_option == "opt1"
        assert not tasks[0].done()


async def test_brackets_type_in_text_fields() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        ask(session, pending(session.clock, run_id="a"))
        ask(session, pending(session.clock, run_id="b"))
        await settle(pilot)
        pane = app.main.query_one(DecisionPane)
        await pilot.press("i", "left_square_bracket", "x", "right_square_bracket", "enter")
        assert app.main.query_one("#pane-instructions", Input).value == "[x]"
        assert pane.pending.escalation.run_id == "a"  # the queue did not move


async def test_history_filters() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        a = pending(session.clock, task="deploy", reason=Reason.SECURITY_CONCERN, question="Ship to prod?")
        b = pending(session.clock, task="docs", question="Rewrite the README?")
        ask(session, a)
        ask(session, b)
        await settle(pilot)
        session.answer(a.escalation.id, Response(ResponseType.OPTION, "opt1", additional_instructions="tonight"))
        await pilot.press("h")
        await settle(pilot)
        table = app.screen.query_one("#history-table", RowTable)
        assert table.row_count == 2
        outcome = str(table.get_cell(a.escalation.id, "outcome"))
        assert "opt1" in outcome and "tonight" in outcome
        assert str(table.get_cell(b.escalation.id, "outcome")) == "pending"
        await pilot.press("slash", *"readme")
        await settle(pilot)
        assert table.row_keys == [b.escalation.id]
        app.screen.query_one("#history-filter-text", Input).value = ""
        app.screen.query_one("#history-filter-by").value = "human"
        await settle(pilot)
        assert table.row_keys == [a.escalation.id]
        await pilot.press("escape")
        assert app.screen is app.main


async def test_palette_starts_a_workflow_and_log_has_no_duplicates(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        await pilot.press("ctrl+p", *"start run: test-fix")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), what="the start dialog")
        assert app.screen.entry.name == "test-fix"
        await pilot.press("x", "enter")
        await wait_until(pilot, lambda: session.pending(), what="the escalation")
        # several runs started back to back: each event is written once in the log
        app.start(session.workflows[0], RunRequest(None, "y"))
        await wait_until(pilot, lambda: len(session.pending()) == 2, what="two escalations")
        await settle(pilot)
        text = "\n".join(line.text for line in app.main.query_one(EventLog).lines)
        assert text.count("asks [") == 1
        assert text.count("→ ") == 1


async def test_keyboard_returns_where_it_was_once_the_queue_is_empty(tmp_path: Path, monkeypatch) -> None:
    """A decision takes the keyboard unasked; answered, the keys go back to the workflow list,
    so the user's next Down + Enter opens the start dialog of the next workflow: typed at once,
    while the keyboard waits to go back (KEYBOARD_GRACE, made long here), as after it."""
    monkeypatch.setattr(tui.screens.main, "KEYBOARD_GRACE", 60.0, raising=False)
    async with demo_console(tmp_path) as (session, app, pilot):
        workflows = app.main.query_one("#workflows")
        workflows.focus()
        await settle(pilot)
        first = workflows.highlighted
        pane = app.main.query_one(DecisionPane)
        task = ask(session, pending(session.clock))
        await wait_until(pilot, lambda: pane.has_focus_within, what="the pane")
        await pilot.press("1")
        assert (await decided(task)).response.selected_option == "opt1"
        await wait_until(pilot, lambda: not pane.visible, what="the pane hidden")
        assert app.focused is not workflows  # waiting to go back
        await pilot.press("down", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), what="the start dialog")
        assert app.screen.entry.name == session.workflows[first + 1].name


async def test_start_dialog_takes_typing_at_once_and_a_second_enter_does_nothing(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        started: list[RunRequest] = []
        original = app.start
        app.start = lambda entry, request: (started.append(request), original(entry, request))[1]  # type: ignore[method-assign]
        # One burst, as a fast typist's keys arrive: all queued before the dialog is mounted.
        for key in ["s", *"hello", "enter", "enter"]:
            app.post_message(events.Key(key, None if key == "enter" else key))
        await settle(pilot)
        assert [r.input for r in started] == ["hello"]
        assert app.screen is app.main and app.return_value is None


async def test_history_shows_only_keys_that_work_there_and_d_goes_back_to_the_decision() -> None:
    from tui.widgets.key_bar import KeyBar

    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock))
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        shown = {item.description for item in app.screen.query_one(KeyBar).items}
        assert app.screen is not app.main and not shown & {"Start run", "Cancel run", "Prev", "Next"}
        assert "Decision" in shown
        await pilot.press("c", "right_square_bracket")  # off here: nothing happens
        await pilot.press("d")
        await settle(pilot)
        assert app.screen is app.main and app.focused is app.main.query_one("#pane-choices")
        await pilot.press("1")
        assert (await decided(task)).response.selected_option == "opt1"


async def test_palette_shows_agent_text_and_task_names_as_written() -> None:
    from textual.command import CommandList

    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        ask(session, pending(session.clock, task="[mk]", question="Deploy to [bold red]PROD[/bold red] or [staging]?"))
        await settle(pilot)
        await pilot.press("ctrl+p", *"dec")
        await wait_until(pilot, lambda: app.screen.query(CommandList) and app.screen.query_one(CommandList).option_count,
                         what="the palette's hits")
        hits = app.screen.query_one(CommandList)
        shown = [str(hits.get_option_at_index(i).prompt) for i in range(hits.option_count)]
        assert any("Decide [[mk]]: Deploy to [bold red]PROD[/bold red] or [staging]?" in line for line in shown), shown


async def test_history_filter_takes_what_is_typed_right_after_slash_and_outcomes_are_plain() -> None:
    from tests.tui.test_pane import burst

    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        from engine.kernel.model import Option

        esc = pending(session.clock, options=(Option("o1", "Yes \x1b[41mbg\x1b[0m [b]x[/b]", recommended=True),))
        ask(session, esc)
        await settle(pilot)
        session.answer(esc.escalation.id, Response(ResponseType.OPTION, "o1"))
        await pilot.press("h")
        await settle(pilot)
        table = app.screen.query_one("#history-table", RowTable)
        assert str(table.get_cell(esc.escalation.id, "outcome")) == 'o1 "Yes ␛[41mbg␛[0m [b]x[/b]" by human'
        burst(app, "/", *"[b] dh")
        await settle(pilot)
        assert app.screen.query_one("#history-filter-text", Input).value == "[b] dh"
        assert app.screen is not app.main  # the `d` and `h` were typed, not pressed
