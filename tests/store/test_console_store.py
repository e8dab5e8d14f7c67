"""The console with `--store`: what one session records, the next one shows (history screen,
metrics) and uses (the engine's agent history: success rates, loop memory)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual.widgets import DataTable, Select, Static

from engine.escalation.agent_policy import AgentEscalationRequest, Denial
from engine.escalation.clock import FakeClock
from engine.escalation.model import Response, ResponseType
from engine.escalation.store import iso
from tests.store.store_helpers import agent_line
from engine.demo import demo_rules, demo_workflows
from rules import load_rules
from tests.tui.helpers import SIZE, ask, decided, entry, make_app, make_session, pending, wait_until
from tui.screens.history import MAX_ROWS, HistoryScreen
from tui.screens.start_run import RunRequest
from tui.session import EAGER_LOAD_BYTES


async def first_session(path: Path) -> None:
    """A session that answers one escalation and sees another withdrawn with its run."""
    clock = FakeClock(1000.0)
    session = make_session(clock=clock, store=path)
    answered = pending(clock, question="Use JWT instead of sessions?", run_id="r1")
    task = ask(session, answered)
    await asyncio.sleep(0)
    session.answer(answered.escalation.id, Response(ResponseType.OPTION, "opt1", additional_instructions="keep the cookie"))
    await decided(task)
    gone = pending(clock, task="deploy-production", question="Ship v1.4.2 to prod?", run_id="r2")
    waiting = ask(session, gone)
    await asyncio.sleep(0)
    session.broker.cancel_run("r2")
    await asyncio.gather(waiting, return_exceptions=True)
    session.history_store.close()


def table_texts(screen: HistoryScreen) -> list[list[str]]:
    table = screen.query_one("#history-table", DataTable)
    return [[str(cell) for cell in table.get_row(key)] for key in table.rows]


async def test_the_next_console_shows_the_earlier_escalations(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    await first_session(path)
    assert [json.loads(x)["kind"] for x in path.read_text().splitlines()] == ["raised", "resolved", "raised", "withdrawn"]

    clock = FakeClock(50.0)
    session = make_session(clock=clock, store=path)
    assert session.records == {} and len(session.earlier) == 2
    now_task = ask(session, pending(clock, question="Rotate the signing keys?", run_id="r9"))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), what="the history screen")
        screen = app.screen
        rows = table_texts(screen)
        assert [row[1] for row in rows] == ["this", "earlier", "earlier"]  # newest first
        assert rows[1][3:] == ["planner", "architecture_decision", "withdrawn", "Ship v1.4.2 to prod?"]  # outcome, question
        assert rows[2][6] == "Use JWT instead of sessions?"
        assert rows[2][5] == 'opt1 "Yes, use JWT" by human + "keep the cookie"'
        assert rows[2][0].endswith("ago")

        screen.query_one("#history-filter-session", Select).value = "earlier"
        await pilot.pause()
        assert [row[6] for row in table_texts(screen)] == ["Ship v1.4.2 to prod?", "Use JWT instead of sessions?"]
        screen.query_one("#history-filter-state", Select).value = "decided"
        await pilot.pause()
        assert [row[6] for row in table_texts(screen)] == ["Use JWT instead of sessions?"]
        screen.query_one("#history-filter-session", Select).value = "this"
        await pilot.pause()
        assert table_texts(screen) == []
        metrics = str(screen.query_one("#history-metrics", Static).render())
        assert "planner: 3 asked, 1 by you" in metrics  # the human metrics count earlier sessions too
    now_task.cancel()


async def test_metrics_include_the_stored_agent_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(
        agent_line("codebase_locator", "codebase_analyzer", at=iso(1_763_000_000.0))
        + agent_line("codebase_locator", "codebase_analyzer", at=iso(1_763_000_100.0))
        + agent_line("codebase_locator", "codebase_pattern_finder", False, at=iso(1_763_000_200.0), denial="loop")
    )
    session = make_session(store=path)
    history = session.agent_history
    assert history is not None and len(history) == 3
    assert abs(history.success_rate("codebase_locator", None, session.clock.now()) - 2 / 3) < 1e-9
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), what="the history screen")
        metrics = str(app.screen.query_one("#history-metrics", Static).render())
        assert "all: 3    loops denied: 1" in metrics
        assert "codebase_locator: success rate 67% of 3" in metrics
        assert "path codebase_locator → codebase_analyzer: 2" in metrics
        assert "denied (loop)" in metrics  # the latest ones, though none is recent


async def test_runs_and_agent_escalations_are_recorded_and_carried_into_the_next_engine(tmp_path: Path) -> None:
    path = tmp_path / "store" / "history.jsonl"
    rules = load_rules(demo_rules())
    session = make_session(demo_workflows(), clock=FakeClock(1000.0), rules=rules, workspace=tmp_path, store=path)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 30, "the engine")
        run = app.start(entry(session, "code-search"), RunRequest(None, "where are sessions validated?"))
        await wait_until(pilot, lambda: run.finished_at is not None, 30, "the run")
        await wait_until(pilot, lambda: '"kind":"run"' in path.read_text(), 5, "the run's line")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    agents = [x for x in lines if x["kind"] == "agent_escalation"]
    assert [(a["source"], a["target"], a["approved"], a["denial"]) for a in agents] == [
        ("codebase_locator", "codebase_analyzer", True, None),
        ("codebase_analyzer", "codebase_locator", False, "loop"),
    ]
    [stored_run] = [x for x in lines if x["kind"] == "run"]
    assert (stored_run["workflow"], stored_run["status"], stored_run["input"]) == ("code-search", "done", "where are sessions validated?")
    assert stored_run["result"].startswith("Sessions are validated")

    # The next session: the engine's history starts with them; the recent approval still
    # counts for loop detection (within the window), and success rates include it.
    later = make_session(demo_workflows(), clock=FakeClock(7.0), rules=rules, workspace=tmp_path, store=path)
    later.open_engine()
    try:
        history = later.engine.agent_policy.history
        assert [(e.source, e.approved) for e in history.entries_since(0)] == [
            ("codebase_locator", True), ("codebase_analyzer", False)]
        assert history.success_rate("codebase_locator", None, later.clock.now()) == 1.0
        handler = later.engine.agent_policy
        back = handler.handle(AgentEscalationRequest("codebase_analyzer", "find", "find the session store",
                                                     "codebase_locator"))
        assert not back.approved and back.denial is Denial.LOOP
        # A new entry of this session is written once, after the earlier ones (the engine's
        # agent_escalation event triggers this drain; the handler was called directly here).
        later._recorder._drain()
        kinds = [json.loads(x)["kind"] for x in path.read_text().splitlines()]
        assert kinds.count("agent_escalation") == 3
    finally:
        later.close()


async def test_old_agent_history_does_not_trip_loop_detection(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    import time

    path.write_text(agent_line("codebase_locator", "codebase_analyzer", at=iso(time.time() - 3600)))
    session = make_session(clock=FakeClock(1000.0), store=path)
    session.open_engine()
    try:
        handler = session.engine.agent_policy
        assert len(handler.history) == 1
        back = handler.handle(AgentEscalationRequest("codebase_analyzer", "find", "find the session store",
                                                     "codebase_locator"))
        assert back.approved  # an hour ago is outside the 300 s loop window
    finally:
        session.close()


async def test_a_big_store_loads_after_the_first_frame(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    one = agent_line("codebase_locator", "codebase_analyzer")
    raised = json.dumps({
        "v": 1, "kind": "raised", "at": "2025-11-22T04:00:00.000Z", "id": "esc-1", "taskId": "t", "runId": "r1",
        "agent": "planner", "reason": "other", "question": "Go?", "context": "", "options": [],
        "allowAgentDecision": True, "timeout": None, "origin": "flow",
        "policy": {"deadline": None, "onTimeout": "wait", "optionId": None, "timeoutSeconds": None}, "extra": {},
    }) + "\n"
    withdrawn = '{"v":1,"kind":"withdrawn","at":"2025-11-22T04:00:01.000Z","id":"esc-1"}\n'
    count = max(EAGER_LOAD_BYTES // len(raised + withdrawn + one) + 10, 600)  # big, and more than a screenful
    path.write_text((raised + withdrawn + one) * count)
    session = make_session(store=path)
    assert not session.store_loaded.is_set() and session.earlier == []
    size = path.stat().st_size
    asked = ask(session, pending(session.clock, question="Asked before the store was read"))
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        assert path.stat().st_size == size  # held: nothing is written before the store is read
        await pilot.press("h")
        await wait_until(pilot, session.store_loaded.is_set, 10, "the store")
        assert json.loads(path.read_text().splitlines()[-1])["question"] == "Asked before the store was read"
        await wait_until(pilot, lambda: len(app.screen.query_one("#history-table", DataTable).rows) == MAX_ROWS, 5, "rows")
        table = app.screen.query_one("#history-table", DataTable)
        assert table.border_subtitle == f"newest {MAX_ROWS} of {count + 1} matching"  # + the one asked now
    assert len(session.earlier) == count and len(session.agent_history) == count
    asked.cancel()
