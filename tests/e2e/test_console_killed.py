"""The console killed with SIGKILL while a decision waits, at random points: opened again, it
shows the same decision with its original deadline, the answer reaches the agent, and the run
ends as an uninterrupted one does, with one decision."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.e2e.pty_console import PtyConsole

DEMO = Path(__file__).parents[2] / "engine" / "demo"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("seed", [1, 2])
def test_a_console_killed_while_a_decision_waits_loses_nothing(tmp_path: Path, monkeypatch, seed: int) -> None:
    rng = random.Random(seed)
    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    monkeypatch.setenv("ESCALATE_DB", db_url)
    workflow = str(DEMO / "auth-refactor.sr")
    first = PtyConsole(tmp_path, workflow, "--run", "--input", "Fix login")
    try:
        first.wait_for(b"DECISION REQUIRED")
        time.sleep(rng.uniform(0.0, 1.0))
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
    finally:
        first.close()
    db = Database(db_url)
    try:
        (run,) = db.list_runs()
        (waiting,) = db.pending_escalations()
    finally:
        db.close()
    again = PtyConsole(tmp_path, workflow)
    try:
        again.wait_for(b"DECISION REQUIRED")  # the same decision, listed again, its run continued
        again.wait_for(b"Inbox (1)")
        time.sleep(rng.uniform(0.0, 1.0))
        again.type("1")
        again.wait_for(b"Plan: move auth to JWT")
        again.type("q")
        assert again.exit_code() == 0
    finally:
        again.close()
    db = Database(db_url)
    try:
        assert db.get_run(run["run_id"])["status"] == "done"
        (row,) = db.escalations_of(run["run_id"])
        assert row["id"] == waiting["id"] and row["status"] == "decided" and row["resolved_by"] == "human"
        decisions = [e for e in db.events_of(run["run_id"]) if e["type"] == "decision"]
        assert [d["selectedOption"] for d in decisions] == ["jwt"]
        raised = [e for e in db.events_of(run["run_id"]) if e["type"] == "human_escalation"]
        assert len(raised) == 1  # asked once, before the kill; not again after it
    finally:
        db.close()
