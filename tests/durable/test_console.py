"""The console on a database: it lists what earlier processes left pending, continues their
runs, and asks before quitting with decisions waiting (nothing is lost after a quit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.durable.database import Database
from engine.kernel.clock import RealClock
from engine.kernel.model import ResponseType
from tests.tui.helpers import SIZE, make_app, make_session, wait_until
from tui.screens.confirm_quit import ConfirmQuit
from tui.widgets.decision_pane import DecisionPane

DEMO = Path(__file__).parents[2] / "engine" / "demo"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def interrupted_run(tmp_path: Path, db_url: str) -> str:
    """An `escalate run` that stopped waiting on a human (exit 4): its run and decision stay."""
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"),
         "--input", "Fix login", "--db", db_url],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 4, proc.stderr
    return proc.stderr.splitlines()[0].removeprefix("run ")


def db_session(tmp_path: Path, db_url: str):  # noqa: ANN201
    return make_session([DEMO / "auth-refactor.sr"], clock=RealClock(), db_url=db_url, workspace=tmp_path)


async def test_the_console_lists_a_waiting_decision_and_continues_its_run(tmp_path) -> None:
    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    run_id = interrupted_run(tmp_path, db_url)
    session = db_session(tmp_path, db_url)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(session.pending()) == 1, 60, "the waiting decision")
        (pending,) = session.pending()
        assert pending.escalation.run_id == run_id and pending.policy.deadline is None
        await wait_until(pilot, lambda: session.run(run_id) is not None, 60, "the run to continue")
        await wait_until(pilot, lambda: app.main.query_one(DecisionPane).pending is not None, 60, "the pane")
        await pilot.press("1")
        handle = session.run(run_id)
        await wait_until(pilot, lambda: handle.status.finished, 60, "the run's end")
        assert handle.status.value == "done" and handle.result.startswith("Plan: move auth to JWT")
        await pilot.press("q")  # nothing left: quits without asking
        await pilot.pause()
    db = Database(db_url)
    try:
        (row,) = db.escalations_of(run_id)
        assert (row["status"], row["resolved_by"], row["decision"]["responseType"]) == ("decided", "human", ResponseType.OPTION.value)
        assert db.get_run(run_id)["status"] == "done"
    finally:
        db.close()


async def test_quitting_with_a_decision_waiting_asks_and_then_leaves_it_for_next_time(tmp_path) -> None:
    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    run_id = interrupted_run(tmp_path, db_url)
    session = db_session(tmp_path, db_url)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: session.run(run_id) is not None and len(session.pending()) == 1, 60, "the run")
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmQuit), 60, "the question")
        assert app.screen.question == "1 decision waiting, 1 run active: they continue next time you open escalate. Quit? y/n"
        await pilot.press("n")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmQuit) and app.is_running
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmQuit), 60, "the question again")
        await pilot.press("y")
        await pilot.pause()
    assert app.return_value == 0
    db = Database(db_url)
    try:
        assert db.get_run(run_id)["status"] == "waiting"  # not cancelled: it continues next time
        assert [r["status"] for r in db.escalations_of(run_id)] == ["pending"]
    finally:
        db.close()
