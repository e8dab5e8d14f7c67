"""Kill -9 while runs park (rows only), while decisions from `escalate answer` requeue them,
while workers continue them and while a worker's poll applies an overdue deadline's default:
real `escalate worker` and `escalate answer` processes on a real SQLite file, SIGKILL
(tests/durable/park_harness.py). Every run ends with the result its decisions give, its whole
log, each decision once, no finished step executed again, nothing left pending. And the windows
of a worker's death made exactly: a decision whose news nobody heard and a deadline that passed
while no worker ran; a worker killed after ending a run's execution, before its row said parked."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.durable.database import Database, runs
from tests.durable.crash_harness import queue_runs
from tests.durable.park_harness import (KILL_POINTS, PARK, PARK_SCRIPT, Audit, ParkReport, answer, answer_until_done,
                                        deadline_in, kill_while_parking)
from tests.workers.procs import WorkerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_kills_while_runs_park_are_requeued_continued_and_given_their_defaults(tmp_path: Path) -> None:
    report = kill_while_parking(tmp_path, random.Random(26), runs=3, kills=len(KILL_POINTS), points=KILL_POINTS)
    assert report.problems == [], report
    assert report.clean and report.kills == len(KILL_POINTS), report
    assert set(report.kill_points) == set(KILL_POINTS), report
    assert report.done == report.runs and report.checks == report.kills, report


def _setup(tmp_path: Path, count: int, deadline: float) -> tuple[str, Database, list[str], Path]:
    """`count` runs of park.sr queued, with both deadlines `deadline` s."""
    rules = tmp_path / "rules.yaml"
    rules.write_text("escalationRules:\n  defaults:\n"
                     f"    architecture_decision: {{timeout: {deadline:g}, onTimeout: recommended}}\n"
                     f"    breaking_change: {{timeout: {deadline:g}, onTimeout: recommended}}\n")
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    ids = queue_runs(url, tmp_path, PARK, PARK_SCRIPT, rules, count)
    return url, Database(url), ids, tmp_path / "steps.jsonl"


def _parked(db: Database, ids: list[str], timeout: float = 120.0) -> list[dict]:
    """Wait until these runs are parked at a pending escalation; those escalations."""
    end = time.monotonic() + timeout
    while True:
        pending = {r["run_id"]: r for r in db.pending_escalations(ids)}
        if all(db.get_run(i)["status"] == "parked" and i in pending for i in ids):
            return [pending[i] for i in ids]
        assert time.monotonic() < end, [(r["run_id"], r["status"]) for r in db.list_runs()]
        time.sleep(0.05)


def _final_audit(db: Database, url: str, ids: list[str], steps: Path) -> ParkReport:
    report = ParkReport(runs=len(ids))
    Audit(db, url, report, steps).check(ids, final=True)
    return report


def test_a_decision_nobody_heard_and_a_deadline_passed_while_no_worker_ran(tmp_path: Path, monkeypatch) -> None:
    """Both workers die (kill -9) with two runs parked; one run's escalation is answered, so its
    news reaches no worker; the other's deadline passes with nobody to time it. Workers started
    later requeue the first (first claimer wins) and apply the second's default exactly once."""
    # A deadline far away while the runs park (however slowly), brought near once no worker runs.
    url, db, ids, steps = _setup(tmp_path, 2, deadline=600)
    monkeypatch.setenv("ESCALATE_STEP_AUDIT", str(steps))
    monkeypatch.setenv("ESCALATE_PARK_AFTER", "0.2")  # it waits for both runs to park: not 2 s of grace
    first = WorkerProcess(url, tmp_path, concurrency=2, name="first")
    later: list[WorkerProcess] = []
    try:
        first.wait_ready()
        answered, defaulted = _parked(db, ids)
        first.kill()
        assert answer(url, tmp_path, answered) == 0
        deadline = deadline_in(db, defaulted["id"], 0.5)
        time.sleep(max(0.0, deadline - time.time()) + 0.5)
        # Nothing happened meanwhile: no process holds either run.
        assert [db.get_run(i)["status"] for i in ids] == ["parked", "parked"]
        assert db.get_escalation(defaulted["id"])["status"] == "pending"
        later = [WorkerProcess(url, tmp_path, concurrency=1, name=f"later{i}").wait_ready() for i in range(2)]
        end = time.monotonic() + 120
        while db.get_escalation(defaulted["id"])["status"] == "pending" or db.get_run(ids[0])["status"] == "parked" \
                and not db.pending_escalations([ids[0]]):
            assert time.monotonic() < end, "the answered run was not requeued, or the default not applied"
            time.sleep(0.05)
        assert db.get_escalation(defaulted["id"])["resolved_by"] == "timeout_default"
        assert db.get_escalation(answered["id"])["resolved_by"] == "human"
        answer_until_done(db, url, tmp_path, ids)
        assert [w.stop() for w in later] == [0, 0]
        report = _final_audit(db, url, ids, steps)
        assert report.problems == [] and report.clean and report.done == 2, report
        assert report.defaults >= 1, report
    finally:
        for worker in [first, *later]:
            worker.kill()
        db.close()


def test_a_worker_killed_after_ending_a_runs_execution_before_its_row_said_parked(tmp_path: Path, monkeypatch) -> None:
    """The window inside parking, made exactly: the run's workflow is cancelled (its execution
    ended) while its row still says waiting, owned by the worker now dead. Another worker takes
    it over, it waits (and parks) again at the same escalation, and ends as it should."""
    url, db, ids, steps = _setup(tmp_path, 1, deadline=600)
    monkeypatch.setenv("ESCALATE_STEP_AUDIT", str(steps))
    monkeypatch.setenv("ESCALATE_PARK_AFTER", "0.2")  # it waits for the run to park, twice: not 2 s of grace each
    first = WorkerProcess(url, tmp_path, concurrency=1, name="first")
    second: WorkerProcess | None = None
    try:
        first.wait_ready()
        (waiting,) = _parked(db, ids)
        owner = first.owner
        first.kill()
        with db.engine.begin() as c:  # as the row was before parking.park wrote it
            c.execute(runs.update().where(runs.c.run_id == ids[0]).values(status="waiting", owner=owner,
                                                                          heartbeat=time.time()))
        with db.engine.connect() as c:  # DBOS's table: its execution ended, off the queue
            status = c.execute(sa.text("SELECT status FROM workflow_status WHERE workflow_uuid = :i"), {"i": ids[0]})
            assert status.scalar() == "CANCELLED"
        second = WorkerProcess(url, tmp_path, concurrency=1, name="second").wait_ready()
        assert [r["id"] for r in _parked(db, ids)] == [waiting["id"]]  # taken over, asked again, parked again
        assert f"{ids[0]}: taken over from {owner}" in second.text
        answer_until_done(db, url, tmp_path, ids)
        assert second.stop() == 0
        report = _final_audit(db, url, ids, steps)
        assert report.problems == [] and report.clean and report.done == 1, report
    finally:
        first.kill()
        if second is not None:
            second.kill()
        db.close()
