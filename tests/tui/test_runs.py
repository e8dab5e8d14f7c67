"""The console over the real engine: demo workflows run on ADK with their scripted models, and
what the user presses in the pane is what the paused agent receives."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.kernel.model import ResolvedBy
from tests.tui.helpers import demo_console, demo_session, entry, settle, wait_until
from tui.screens.start_run import RunRequest
from tui.widgets.decision_pane import DecisionPane
from tui.widgets.event_log import EventLog


def finished(handle) -> bool:
    return handle.finished_at is not None


def log_text(app) -> str:
    return "\n".join(line.text for line in app.main.query_one(EventLog).lines)


async def wait_for_log(pilot, app, *lines: str) -> None:
    """Run events reach the log in batches, after the run itself may have ended."""
    await wait_until(pilot, lambda: all(line in log_text(app) for line in lines), what=f"log lines {lines}")


async def test_start_from_dialog_answer_reaches_the_agent(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        assert [e.name for e in session.workflows][0] == "auth-refactor"
        await pilot.press("s", *"go", "enter")  # the dialog: default flow, input "go"
        await wait_until(pilot, lambda: session.pending(), what="the escalation")
        run = session.runs[0]
        assert run.input == "go"
        assert run.status.value == "waiting"
        assert app.main.query_one(DecisionPane).visible
        await pilot.press("2")
        await wait_until(pilot, lambda: finished(run), what="the run")
        assert run.status.value == "done"
        assert run.result.startswith("Plan: keep server sessions")
        await wait_for_log(pilot, app, 'decided sessions "No, keep sessions" by human', "planner asks [architecture_decision]")


@pytest.mark.parametrize(
    ("keys", "reply"),
    [
        (["enter"], "Plan: move auth to JWT"),
        (["3"], "Plan (my call)"),
        (["4"], "Understood: the auth refactor is skipped"),
        (["5", *"x", "enter"], "Plan: following your answer"),
    ],
)
async def test_each_choice_type_reaches_the_agent(tmp_path: Path, keys: list[str], reply: str) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "auth-refactor"), RunRequest(None, "plan"))
        await wait_until(pilot, lambda: session.pending(), what="the escalation")
        await pilot.press(*keys)
        await wait_until(pilot, lambda: finished(run), what="the run")
        assert str(run.result).startswith(reply)


async def test_two_runs_escalating_at_once_get_their_own_answers(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        auth = app.start(entry(session, "auth-refactor"), RunRequest(None, "a"))
        tests = app.start(entry(session, "test-fix"), RunRequest(None, "b"))
        await wait_until(pilot, lambda: len(session.pending()) == 2, what="two escalations")
        pane = app.main.query_one(DecisionPane)
        first = session.pending()[0].escalation.run_id  # which run asks first is the runs' business
        assert pane.pending.escalation.run_id == first  # the first raised is shown first
        await pilot.press("right_square_bracket")
        assert pane.pending.escalation.run_id != first  # `]` moves to the other one
        if first == tests.id:
            await pilot.press("right_square_bracket")  # and around the queue, back to test-fix
        assert pane.pending.escalation.run_id == tests.id
        await pilot.press("2")  # test-fix: "Allow 5 s of skew"
        await wait_until(pilot, lambda: finished(tests), what="test-fix")
        assert not finished(auth)  # the other run still waits for its own answer
        await settle(pilot)
        assert pane.pending.escalation.run_id == auth.id
        await pilot.press("1")
        await wait_until(pilot, lambda: finished(auth), what="auth-refactor")
        assert tests.result.startswith("Relaxed")
        assert auth.result.startswith("Plan: move auth to JWT")


async def test_countdown_default_reaches_the_agent(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "test-fix"), RunRequest(None, "fix"))
        await wait_until(pilot, lambda: session.pending(), what="the escalation")
        countdown = app.main.query_one("#pane-countdown")
        assert str(countdown.render()) == "No answer in 1:30 → the agent decides"
        session.clock.advance(91)
        await wait_until(pilot, lambda: finished(run), what="the run")
        assert run.result.startswith("Nobody answered, so I chose")
        record = next(iter(session.records.values()))
        assert record.decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT
        await wait_for_log(pilot, app, "by timeout_default")


async def test_cancel_withdraws_the_decision(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "auth-refactor"), RunRequest(None, "plan"))
        await wait_until(pilot, lambda: session.pending(), what="the escalation")
        await pilot.press("c")
        await wait_until(pilot, lambda: finished(run), what="the cancelled run")
        assert run.status.value == "cancelled"
        assert session.pending() == []
        await settle(pilot)
        assert not app.main.query_one(DecisionPane).visible
        assert next(iter(session.records.values())).state == "withdrawn"


@pytest.mark.parametrize(("key", "written"), [("1", True), ("2", False)])
async def test_tool_approval_under_task_override(tmp_path: Path, key: str, written: bool) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "deploy-production"), RunRequest(None, "ship v1.4.2"))
        await wait_until(pilot, lambda: session.pending(), what="the approval")
        shown = app.main.query_one(DecisionPane).pending.escalation
        assert [o.id for o in shown.options] == ["approve", "deny"]
        assert shown.task_id == "deploy-production"
        await pilot.press(key)
        await wait_until(pilot, lambda: finished(run), what="the run")
        assert (tmp_path / "RELEASED.txt").exists() is written
        assert run.result.startswith("Released" if written else "Release stopped")


async def test_agent_loop_denied_and_history_metrics(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "code-search"), RunRequest(None, "where are sessions validated?"))
        await wait_until(pilot, lambda: finished(run), what="the run")
        assert run.status.value == "done"
        await wait_for_log(pilot, app, "codebase_locator → codebase_analyzer approved",
                           "codebase_analyzer → codebase_locator denied")
        await pilot.press("h")
        await settle(pilot)
        metrics = str(app.screen.query_one("#history-metrics").render())
        assert "loops denied: 1" in metrics
        assert "codebase_locator: success rate 100%" in metrics
        assert "codebase_analyzer: success rate 0%" in metrics


async def test_resolver_returns_the_value_before_drifting(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "resolver"), RunRequest(None, "escalate is a console"))
        await wait_until(pilot, lambda: finished(run), what="the run")
        assert run.result == "escalate pauses agents that need you; you answer in one console, with one key."
        await wait_for_log(pilot, app, "peer1 escalated (~ 'DRIFTING')")


def test_a_script_is_read_again_only_when_its_file_changes(tmp_path: Path) -> None:
    session = demo_session(tmp_path)
    script = tmp_path / "resolver.yaml"
    script.write_text(entry(session, "resolver").script.read_text())
    first = session._script(script)
    assert session._script(script) is first  # unchanged: not read again for the next run
    script.write_text(script.read_text() + "\n")
    assert session._script(script) is not first  # edited: the next run gets the new file
