"""Snapshot tests of the console's screens on a frozen FakeClock (plain `def`: snap_compare runs
the app itself). Regenerate after a deliberate change with `pytest tests/tui --snapshot-update`."""

from __future__ import annotations

from engine.demo import demo_workflows
from engine.kernel.model import Option, Origin, Reason, Response, ResponseType
from tests.tui.helpers import make_app, make_session, pending

SIZE = (110, 36)


def _app():
    session = make_session(demo_workflows())
    return make_app(session), session


def _raise_three(session) -> None:
    clock = session.clock
    items = [
        pending(clock, task="test-fix", run_id="r1", reason=Reason.TEST_FAILURE, timeout=90,
                question="test_refresh_token fails: relax the expiry check or fix the clock?",
                context="AssertionError: token expired 2 s early [prod vs staging clocks]",
                options=(Option("fix_clock", "Fix the clock source", "inject the clock", True),
                         Option("relax", "Allow 5 s of skew"))),
        pending(clock, task="journalowl-api-fix", run_id="r2", timeout=None, allow_agent_decision=False),
        pending(clock, task="deploy-production", run_id="r3", reason=Reason.SECURITY_CONCERN, timeout=None,
                question="Allow deployer to call the tool write_file?", context='write_file({"path": "RELEASED.txt"})',
                options=(Option("approve", "Approve: run write_file"), Option("deny", "Deny: refuse this call")),
                origin=Origin.TOOL_APPROVAL, allow_agent_decision=False),
    ]
    import asyncio

    for item in items:
        asyncio.get_running_loop().create_task(session.broker.ask(item))


def test_main_screen_idle(snap_compare) -> None:
    app, _ = _app()
    assert snap_compare(app, terminal_size=SIZE)


def test_decision_pane(snap_compare) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _raise_three(session)
        await pilot.pause()
        session.clock.advance(25)  # the countdown reads 1:05, frozen
        app.main.refresh_clock()  # what the 1 s timer does, without waiting for it
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_queue_moved_to_the_tool_approval(snap_compare) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _raise_three(session)
        await pilot.pause()
        await pilot.press("right_square_bracket", "right_square_bracket")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_history_screen(snap_compare) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _raise_three(session)
        await pilot.pause()
        first, second, third = session.pending()
        session.answer(second.escalation.id, Response(ResponseType.OPTION, "opt2", additional_instructions="keep cookie"))
        session.answer(third.escalation.id, Response(ResponseType.OPTION, "deny"))
        session.clock.advance(95)  # the test failure's default: the agent decides
        app.main.refresh_clock()
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_help_screen(snap_compare) -> None:
    app, _ = _app()
    assert snap_compare(app, terminal_size=SIZE, press=["question_mark"])


# ---- issue 16: the screens at 80x24 and 120x40 ---------------------------------------------------

import pytest  # noqa: E402

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}


def _flow_question(session) -> None:
    import asyncio

    item = pending(session.clock, task="release", run_id="r7", question="Anything to add before the release?", context="",
                   options=(), allow_agent_decision=False, reason=Reason.OTHER, origin=Origin.FLOW, timeout=None)
    asyncio.get_running_loop().create_task(session.broker.ask(item))


@pytest.mark.parametrize("size", SIZES)
def test_decision_pane_sizes(snap_compare, size: str) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _raise_three(session)
        await pilot.pause()
        session.clock.advance(25)
        app.main.refresh_clock()
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZES[size], run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_flow_question_opens_on_its_answer_field(snap_compare, size: str) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _flow_question(session)
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_pane_set_aside(snap_compare, size: str) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _raise_three(session)
        for _ in range(100):  # the pane takes the keyboard once it has its widgets (after the first frame)
            await pilot.pause(0.02)
            choices = app.main.query("#pane-choices")
            if choices and choices.first().has_focus:
                break
        await pilot.press("escape")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_history_sizes(snap_compare, size: str) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _raise_three(session)
        await pilot.pause()
        first, second, third = session.pending()
        session.answer(second.escalation.id, Response(ResponseType.OPTION, "opt2", additional_instructions="keep cookie"))
        session.answer(third.escalation.id, Response(ResponseType.OPTION, "deny"))
        session.clock.advance(95)
        app.main.refresh_clock()
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_history_record_in_full(snap_compare, size: str) -> None:
    app, session = _app()

    async def before(pilot) -> None:
        _raise_three(session)
        await pilot.pause()
        first = session.pending()[0]
        session.answer(first.escalation.id, Response(ResponseType.OPTION, "relax", additional_instructions="only in CI"))
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_help_sizes(snap_compare, size: str) -> None:
    app, _ = _app()
    assert snap_compare(app, terminal_size=SIZES[size], press=["question_mark"])
