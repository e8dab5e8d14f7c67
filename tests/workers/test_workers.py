"""`escalate worker` and `run --detach` with real processes on a real database (PostgreSQL started
by the suite, and SQLite): a queue shared by two workers, a worker killed mid-run whose runs
another takes over, a worker stopped by SIGTERM that finishes its step first. Every run ends as
an uninterrupted one does: one decision per escalation, each reaching its own run, and no
recorded step run again."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.durable import crash_harness
from tests.workers.procs import ASK, ASK_SCRIPT, WorkerProcess, answer_directly, audit, escalate

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def queue_runs(cwd: Path, url: str, count: int) -> list[str]:
    """`count` runs of ask.sr queued as `run --detach` queues them, in one process (not one
    process each: each start costs seconds on a loaded host); the command's own: test_detach_*."""
    return crash_harness.queue_runs(url, cwd, ASK, ASK_SCRIPT, None, count)


def wait_until(condition, timeout: float = 120.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def waiting_runs(db: Database) -> set[str]:
    """The runs waiting on a decision: parked (rows only), no worker holds them."""
    pending = {row["run_id"] for row in db.pending_escalations()}
    return {r["run_id"] for r in db.list_runs() if r["run_id"] in pending and r["status"] == "parked" and r["owner"] is None}


def test_detach_queues_a_run_and_prints_its_id(tmp_path: Path, pg_url: str) -> None:
    done = escalate("run", str(ASK), "--script", str(ASK_SCRIPT), "--input", "go", "--db", pg_url, "--detach", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_id = done.stdout.strip()
    listed = json.loads(escalate("runs", "--db", pg_url, "--format", "json", cwd=tmp_path).stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "queued")]
    resumed = escalate("resume", run_id, "--db", pg_url, cwd=tmp_path)  # a worker's to start, not this process's
    assert resumed.returncode == 2 and "queued for a worker" in resumed.stderr and "Traceback" not in resumed.stderr


def test_detach_refuses_what_only_a_run_in_this_process_can_use(tmp_path: Path) -> None:
    done = escalate("run", str(ASK), "--script", str(ASK_SCRIPT), "--detach", "--wait", cwd=tmp_path)
    assert done.returncode == 2 and "--detach" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [["--concurrency", "0"], ["--concurrency", "x"], ["--db", "mysql://h/d"]])
def test_worker_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    done = escalate("worker", *args, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def test_two_workers_share_the_queue(tmp_path: Path, pg_url: str) -> None:
    workers = [WorkerProcess(pg_url, tmp_path, concurrency=1, name=f"w{i}") for i in range(2)]
    db = Database(pg_url)
    try:
        for worker in workers:
            worker.wait_ready()
        ids = queue_runs(tmp_path, pg_url, 4)
        # Each worker takes one run at a time (concurrency 1); a run waiting for a person leaves
        # its worker, so all four wait at once.
        wait_until(lambda: waiting_runs(db) == set(ids), what="all four runs waiting, parked")

        def all_done() -> bool:  # `escalate answer`'s own update (the command: test_parking.py)
            for row in db.pending_escalations():
                answer_directly(db, row)
            return all(db.get_run(run_id)["status"] == "done" for run_id in ids)

        wait_until(all_done, what="every run done")
        report = audit(db)
        assert (report.runs, report.done, report.escalations) == (4, 4, 8), report
        assert (report.lost, report.doubled, report.misrouted) == (0, 0, 0), report
        ran_by = {db.get_run(run_id)["owner"] for run_id in ids}
        assert ran_by <= {w.owner for w in workers}
        assert [w.stop() for w in workers] == [0, 0]
    finally:
        for worker in workers:
            worker.kill()
        db.close()



def test_a_killed_worker_s_runs_are_taken_over(tmp_path: Path, any_url: str) -> None:
    steps = tmp_path / "steps.jsonl"
    env = {**os.environ, "ESCALATE_STEP_AUDIT": str(steps)}
    first = WorkerProcess(any_url, tmp_path, concurrency=3, name="first", env=env)
    second: WorkerProcess | None = None
    db = Database(any_url)
    try:
        first.wait_ready()
        ids = queue_runs(tmp_path, any_url, 2)
        wait_until(lambda: waiting_runs(db) == set(ids), what="both runs waiting")
        for row in db.pending_escalations():
            assert answer_directly(db, row)

        def command_running() -> bool:  # the decisions put the runs back on the first worker
            lines = steps.read_text().splitlines() if steps.exists() else []
            return any('"tool run_command"' in line and '"live"' in line for line in lines)

        wait_until(command_running, what="a command in flight on the first worker")
        first.kill()
        second = WorkerProcess(any_url, tmp_path, concurrency=3, name="second", env=env).wait_ready()

        def all_done() -> bool:
            for row in db.pending_escalations():
                answer_directly(db, row)
            return all(db.get_run(run_id)["status"] == "done" for run_id in ids)

        wait_until(all_done, what="every run done on the second worker")
        assert {db.get_run(run_id)["owner"] for run_id in ids} == {second.owner}
        assert f"taken over from {first.owner}" in second.text
        report = audit(db, steps)
        assert (report.done, report.escalations, report.lost, report.doubled, report.misrouted) == (2, 4, 0, 0, 0), report
        assert second.stop() == 0
    finally:
        first.kill()
        if second is not None:
            second.kill()
        db.close()


def test_sigterm_finishes_the_step_in_flight_then_another_worker_continues(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    steps = tmp_path / "steps.jsonl"
    env = {**os.environ, "ESCALATE_STEP_AUDIT": str(steps)}
    first = WorkerProcess(url, tmp_path, concurrency=2, name="first", env=env)
    second: WorkerProcess | None = None
    db = Database(url)
    try:
        first.wait_ready()
        (run_id,) = queue_runs(tmp_path, url, 1)
        wait_until(lambda: bool(db.pending_escalations()), what="the first decision")
        (row,) = db.pending_escalations()
        assert answer_directly(db, row)

        def command_running() -> bool:
            lines = steps.read_text().splitlines() if steps.exists() else []
            live = [json.loads(line) for line in lines if '"live"' in line]
            return any(entry["name"] == "tool run_command" for entry in live)

        wait_until(command_running, what="the command step in flight")
        first.proc.terminate()  # SIGTERM while `sleep 0.3` runs
        assert first.proc.wait(60) == 0
        assert "stopped" in first.text
        entries = [json.loads(line) for line in steps.read_text().splitlines()]
        command = [e for e in entries if e["name"] == "tool run_command"]
        assert [e["kind"] for e in command] == ["live", "recorded"]  # finished and recorded before the exit
        second = WorkerProcess(url, tmp_path, concurrency=2, name="second", env=env).wait_ready()

        def done() -> bool:
            for pending in db.pending_escalations():
                answer_directly(db, pending)
            return db.get_run(run_id)["status"] == "done"

        wait_until(done, what="the run done on the second worker")
        entries = [json.loads(line) for line in steps.read_text().splitlines()]
        live = [e["key"] for e in entries if e["kind"] == "live"]
        assert len(live) == len(set(live))  # nothing ran twice, not even the step in flight at SIGTERM
        assert (tmp_path / "ran.txt").read_text().split() == ["ran"]
        assert second.stop() == 0
    finally:
        first.kill()
        if second is not None:
            second.kill()
        db.close()
