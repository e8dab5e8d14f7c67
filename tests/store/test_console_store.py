"""The console's history is the database's: what one session decides, the next one shows (history
screen, metrics) and uses (the engine's agent history: success rates, loop memory); a --store
file of an earlier version is imported into it once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from textual.widgets import Select, Static

from engine.escalation.agent_policy import AgentEscalationRequest, Denial
from engine.kernel.clock import RealClock
from engine.kernel.model import Response, ResponseType
from engine.escalation.store import iso
from engine.demo import demo_rules, demo_workflows
from rules import load_rules
from tests.store.store_helpers import agent_line, raised_line, resolved_line
from tests.tui.helpers import SIZE, ask, decided, entry, make_app, make_session, pending, wait_until
from tui.widgets.row_table import RowTable
from tui.screens.history import MAX_ROWS, HistoryScreen
from tui.screens.start_run import RunRequest
from tui.session import EAGER_CHECK_BYTES


def db_session(tmp_path: Path, **kw):  # noqa: ANN201
    return make_session(kw.pop("workflows", []), clock=RealClock(), db_url=f"sqlite:///{tmp_path / 'escalate.db'}", **kw)


async def first_session(tmp_path: Path) -> None:
    """A session that answers one escalation and sees another withdrawn with its run."""
    session = db_session(tmp_path)
    await session.open_database()
    try:
        answered = pending(session.clock, question="Use JWT instead of sessions?", run_id="r1")
        task = ask(session, answered)
        await asyncio.sleep(0)
        session.answer(answered.escalation.id, Response(ResponseType.OPTION, "opt1", additional_instructions="keep the cookie"))
        await decided(task)
        gone = pending(session.clock, task="deploy-production", question="Ship v1.4.2 to prod?", run_id="r2")
        waiting = ask(session, gone)
        await asyncio.sleep(0)
        session.broker.cancel_run("r2")
        await asyncio.gather(waiting, return_exceptions=True)
    finally:
        session.close()


def table_texts(screen: HistoryScreen) -> list[list[str]]:
    table = screen.query_one("#history-table", RowTable)
    return [[str(cell) for cell in table.get_row(key)] for key in table.row_keys]


async def test_the_next_console_shows_the_earlier_escalations(tmp_path: Path) -> None:
    await first_session(tmp_path)
    session = db_session(tmp_path)
    await session.open_database()
    assert session.records == {} and len(session.earlier) == 2
    now_task = ask(session, pending(session.clock, question="Rotate the signing keys?", run_id="r9"))
    app = make_app(session)
    try:
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
    finally:
        now_task.cancel()
        session.close()


async def test_metrics_include_an_imported_agent_history(tmp_path: Path) -> None:
    store = tmp_path / "history.jsonl"
    store.write_text(
        agent_line("codebase_locator", "codebase_analyzer", at=iso(1_763_000_000.0))
        + agent_line("codebase_locator", "codebase_analyzer", at=iso(1_763_000_100.0))
        + agent_line("codebase_locator", "codebase_pattern_finder", False, at=iso(1_763_000_200.0), denial="loop")
    )
    session = db_session(tmp_path, store=store)
    await session.open_database()
    try:
        assert session.imported == (0, 0)
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
    finally:
        session.close()


async def test_runs_and_agent_escalations_are_recorded_and_carried_into_the_next_engine(tmp_path: Path) -> None:
    rules = load_rules(demo_rules())
    session = db_session(tmp_path, workflows=demo_workflows(), rules=rules, workspace=tmp_path)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        run = app.start(entry(session, "code-search"), RunRequest(None, "where are sessions validated?"))
        await wait_until(pilot, lambda: run.finished_at is not None, 60, "the run")
        db = session.db
        assert [(e[1], e[2], e[3], e[6]) for e in db.agent_entries()] == [
            ("codebase_locator", "codebase_analyzer", True, None),
            ("codebase_analyzer", "codebase_locator", False, "loop"),
        ]
        stored = db.get_run(run.id)
        assert (stored["workflow"], stored["status"], stored["input"]) == ("code-search", "done", "where are sessions validated?")
        session.close()

    # The next session: the engine's history starts with them; the recent approval still
    # counts for loop detection (within the window), and success rates include it.
    later = db_session(tmp_path, workflows=demo_workflows(), rules=rules, workspace=tmp_path)
    await later.open_database()
    later.open_engine()
    try:
        assert [(r.id, r.status) for r in later.earlier_runs] == [(run.id, "done")]
        history = later.engine.agent_policy.history
        assert [(e.source, e.approved) for e in history.entries_since(0)] == [
            ("codebase_locator", True), ("codebase_analyzer", False)]
        assert history.success_rate("codebase_locator", None, later.clock.now()) == 1.0
        back = later.engine.agent_policy.handle(AgentEscalationRequest(
            "codebase_analyzer", "find", "find the session store", "codebase_locator"))
        assert not back.approved and back.denial is Denial.LOOP
    finally:
        later.close()


async def test_old_agent_history_does_not_trip_loop_detection(tmp_path: Path) -> None:
    store = tmp_path / "history.jsonl"
    store.write_text(agent_line("codebase_locator", "codebase_analyzer", at=iso(time.time() - 3600)))
    session = db_session(tmp_path, store=store)
    await session.open_database()
    session.open_engine()
    try:
        handler = session.engine.agent_policy
        assert len(handler.history) == 1
        back = handler.handle(AgentEscalationRequest("codebase_analyzer", "find", "find the session store",
                                                     "codebase_locator"))
        assert back.approved  # an hour ago is outside the 300 s loop window
    finally:
        session.close()


async def test_a_big_store_is_imported_after_the_first_frame(tmp_path: Path) -> None:
    store = tmp_path / "history.jsonl"
    pair = raised_line("esc-1") + resolved_line("esc-1")
    count = max(EAGER_CHECK_BYTES // len(pair) + 10, 600)  # big, and more than a screenful
    store.write_text(pair * count)
    session = db_session(tmp_path, store=store)
    assert not session.store_loaded.is_set() and session.earlier == []
    app = make_app(session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("h")
            await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), what="the history screen")
            table = app.screen.query_one("#history-table", RowTable)
            assert "loading earlier sessions" in str(table.border_subtitle)
            await session.open_database()  # what the console does right after its first frame
            await wait_until(pilot, lambda: table.row_count == MAX_ROWS, 60, "rows")
            assert table.border_subtitle == f"newest {MAX_ROWS} of {count} matching"
        assert session.imported == (count, 0) and len(session.earlier) == count
    finally:
        session.close()
