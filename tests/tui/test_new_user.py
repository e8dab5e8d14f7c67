"""What a new user tripped over (issue 16): a flow's question without options, Escape and `d`,
the Events panel following the decision on screen, a failed run's fix that stays, the status
line and help, on the real broker and (for runs) the real engine."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, OptionList

from engine.kernel.model import Origin, Reason, ResponseType
from tests.tui.helpers import SIZE, ask, decided, demo_console, entry, make_app, make_session, pending, settle, wait_until
from tui.session import RunRequest
from tui.widgets.decision_pane import DecisionPane
from tui.widgets.event_log import EventLog
from tui.widgets.header import ConsoleHeader
from tui.widgets.workflow_list import WorkflowList


def _flow_question(clock, question: str = "Deploy to production now?"):
    return pending(clock, task="release", run_id="r9", question=question, context="", options=(),
                   allow_agent_decision=False, reason=Reason.OTHER, origin=Origin.FLOW, timeout=None)


async def test_a_question_without_options_opens_on_its_answer_field_and_enter_sends_it() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, _flow_question(session.clock))
        await settle(pilot)
        custom = app.main.query_one("#pane-custom", Input)
        assert custom.display and app.focused is custom  # no reflexive Enter on Skip
        await pilot.press("a", "f", "t", "e", "r", " ", "6", "enter")
        decision = await decided(task)
        assert decision.response.response_type is ResponseType.TEXT
        assert decision.response.text_response == "after 6"


async def test_enter_on_the_choices_of_a_question_without_options_types_rather_than_skips() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, _flow_question(session.clock))
        await settle(pilot)
        await pilot.press("escape")  # from the field to the choices: the highlight is on Custom
        choices = app.main.query_one("#pane-choices", OptionList)
        assert app.focused is choices
        await pilot.press("enter")
        assert app.focused is app.main.query_one("#pane-custom", Input)
        await pilot.press("o", "k", "enter")
        assert (await decided(task)).response.text_response == "ok"


async def test_escape_sets_the_pane_aside_and_d_brings_it_back() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        task = ask(session, pending(session.clock))
        await settle(pilot)
        pane = app.main.query_one(DecisionPane)
        assert pane.visible and app.focused is app.main.query_one("#pane-choices", OptionList)
        await pilot.press("escape")
        await settle(pilot)
        assert not pane.visible and not pane.has_focus_within
        assert isinstance(app.focused, WorkflowList)  # where the keyboard was before the decision
        await pilot.press("1")  # a stray key while aside answers nothing
        await settle(pilot)
        assert not task.done()
        assert "1 decision waiting" in app.title  # still told, in the header
        await pilot.press("d")
        await settle(pilot)
        assert pane.visible and app.focused is app.main.query_one("#pane-choices", OptionList)
        await pilot.press("1")
        assert (await decided(task)).response.selected_option == "opt1"


async def test_the_status_line_shows_the_oldest_waiting_decisions_age() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        header = app.main.query_one(ConsoleHeader)
        assert header.status == ""
        ask(session, pending(session.clock))
        await settle(pilot)
        session.clock.advance(65)
        ask(session, pending(session.clock, run_id="r2"))
        await settle(pilot)
        header.tick()  # what its 1 s timer does
        assert header.status == "oldest 1:05"
        assert "oldest 1:05" in str(header.render())


async def test_the_events_panel_follows_the_decision_on_screen(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        fix = app.start(entry(session, "test-fix"), RunRequest(None, "fix"))
        await wait_until(pilot, lambda: len(session.pending()) == 1, what="the test-fix question")
        auth = app.start(entry(session, "auth-refactor"), RunRequest(None, "plan"))  # selects the new run
        await wait_until(pilot, lambda: len(session.pending()) == 2, what="the auth question")
        log = app.main.query_one(EventLog)
        assert app.main.query_one(DecisionPane).pending.escalation.run_id == fix.id
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert log.run_id == auth.id
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert log.run_id == fix.id and app.main.query_one("#runs").selected_run_id == fix.id
        await app.action_quit()


async def test_a_failed_runs_error_stays_in_its_log(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "resolver"), RunRequest("nope", ""))  # an unknown flow: the run fails
        await wait_until(pilot, lambda: run.finished_at is not None, what="the failure")
        await settle(pilot)
        log = app.main.query_one(EventLog)
        text = "\n".join(strip.text for strip in log.lines)
        assert "✗ failed:" in text and "nope" in text
        app.main.query_one("#runs").move_cursor(row=0)
        app.main._show_log(run)  # shown again later (another run was selected meanwhile)
        assert "✗ failed:" in "\n".join(strip.text for strip in log.lines)
