"""A run waiting for a person leaves its worker (parked: rows only) and its decision, from another
process, puts it back on the queue, where a worker continues it from its recorded steps. Real
`escalate worker` and `escalate answer` processes, real SQLite files and a real PostgreSQL
server, SIGKILL."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.cli_here import escalate_here
from tests.durable.park_harness import deadline_in
from tests.workers.procs import ASK, ASK_SCRIPT, WorkerProcess, answer_args, answer_directly, audit, escalate
from tests.workers.test_workers import queue_runs, wait_until, waiting_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]



def steps_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    steps = tmp_path / "steps.jsonl"
    return steps, {**os.environ, "ESCALATE_STEP_AUDIT": str(steps)}


def test_one_place_three_waiting_runs_each_answered_from_another_process(tmp_path: Path, any_url: str) -> None:
    steps, env = steps_env(tmp_path)
    env["ESCALATE_PARK_AFTER"] = "0.2"  # each round waits for the last run to park: not 2 s of grace
    worker = WorkerProcess(any_url, tmp_path, concurrency=1, env=env)
    db = Database(any_url)
    try:
        worker.wait_ready()
        ids = queue_runs(tmp_path, any_url, 3)
        # One place: the first run waiting for a person does not keep the other two from theirs.
        wait_until(lambda: waiting_runs(db) == set(ids), timeout=90, what="all three runs at their escalation")
        listed = json.loads(escalate("runs", "--db", any_url, "--format", "json", cwd=tmp_path).stdout)
        assert sorted((r["run_id"], r["status"], len(r["pending"])) for r in listed) == sorted((i, "waiting", 1) for i in ids)
        for _ in range(2):  # each run asks twice: its agent, then its flow
            # `escalate answer` for each run, the three processes at once (each start costs seconds).
            answering = [subprocess.Popen([sys.executable, "-m", "engine", *answer_args(row), "--db", any_url], cwd=tmp_path,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                         for row in db.pending_escalations()]
            for answer in answering:
                err = answer.communicate(timeout=120)[1]
                assert answer.returncode == 0, err
            wait_until(lambda: waiting_runs(db) == set(ids) or all(db.get_run(i)["status"] == "done" for i in ids),
                       what="every answered run continued by the worker to its next wait or its end")
        assert all(db.get_run(i)["status"] == "done" for i in ids)
        report = audit(db, steps)
        assert (report.done, report.escalations, report.lost, report.doubled, report.misrouted) == (3, 6, 0, 0, 0), report
        assert (tmp_path / "ran.txt").read_text().split() == ["ran"] * 3  # each command once
        assert worker.stop() == 0
    finally:
        worker.kill()
        db.close()


def test_a_deadline_with_no_process_holding_the_run_applies_its_default_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    rules = tmp_path / "rules.yaml"
    # A deadline far away while the run parks (however slowly), brought near once it has.
    rules.write_text("escalationRules:\n  defaults:\n    architecture_decision: {timeout: 600, onTimeout: recommended}\n")
    env = {**os.environ, "ESCALATE_PARK_AFTER": "0.2"}  # the test waits for the run to park: not 2 s of grace
    workers = [WorkerProcess(url, tmp_path, concurrency=1, name=f"w{i}", env=env) for i in range(2)]
    db = Database(url)
    try:
        for worker in workers:
            worker.wait_ready()
        done = escalate_here("run", str(ASK), "--script", str(ASK_SCRIPT), "--rules", str(rules), "--db", url, "--detach",
                             cwd=tmp_path)  # queued (in this process: queueing is not the point here)
        run_id = done.stdout.strip()
        wait_until(lambda: waiting_runs(db) == {run_id}, what="the run parked at its first escalation")
        first = f"{run_id}.2"
        assert db.get_escalation(first)["status"] == "pending"  # nobody holds it
        deadline_in(db, first, 0.5)
        # Two workers poll; the default applies once, and the run goes on to its second question.
        wait_until(lambda: any(r["id"] != first for r in db.pending_escalations()), what="the default applied")
        row = db.get_escalation(first)
        assert (row["status"], row["resolved_by"]) == ("decided", "timeout_default")
        (second,) = db.pending_escalations()
        assert answer_directly(db, second)
        wait_until(lambda: db.get_run(run_id)["status"] == "done", what="the run done")
        decisions = [e for e in db.events_of(run_id) if e["type"] == "decision"]
        assert [(e["id"], e["resolvedBy"]) for e in decisions] == [(first, "timeout_default"), (second["id"], "human")]
        assert json.loads(db.get_run(run_id)["result"]) == f"built | ship {run_id}"
        assert [w.stop() for w in workers] == [0, 0]
    finally:
        for worker in workers:
            worker.kill()
        db.close()


def test_kill_9_while_runs_park_and_while_decisions_requeue_them(tmp_path: Path) -> None:
    """Workers killed at random moments while runs raise, park, are answered, claimed back and
    continued: every run ends as an uninterrupted one does."""
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    steps, env = steps_env(tmp_path)
    db = Database(url)
    ids = queue_runs(tmp_path, url, 5)
    stop = threading.Event()

    def answer_forever() -> None:  # another process's decisions, as soon as each is raised
        answers = Database(url)
        try:
            while not stop.is_set():
                for row in answers.pending_escalations():
                    answer_directly(answers, row)
                time.sleep(0.05)
        finally:
            answers.close()

    answering = threading.Thread(target=answer_forever, daemon=True)
    answering.start()
    rng = random.Random(26)
    kills = 0
    upcoming = worker = WorkerProcess(url, tmp_path, concurrency=2, name="w0", env=env)
    try:
        for round_ in range(40):
            if all(db.get_run(i)["status"] == "done" for i in ids):
                break
            worker = upcoming.wait_ready()
            # The next one starts (its imports take seconds) while this one works and dies.
            upcoming = WorkerProcess(url, tmp_path, concurrency=2, name=f"w{round_ + 1}", env=env)
            # Killed in its work: after its n-th step began (n random), a moment later. A time
            # counted from its start hit its warm-up (ADK's import: seconds) on a loaded host, every
            # time: the last worker, never killed, did all the work; on a quiet one, long after it.
            nth = rng.randint(1, 4)
            # All over, not all done: a run ending otherwise (failed) has no more steps to begin,
            # and waiting for them hid its end behind "timed out waiting for the worker's step".
            wait_until(lambda: steps_begun(steps, worker.proc.pid) >= nth or all_over(db, ids), timeout=180,
                       what=f"the worker's step {nth} ({runs_now(db, ids)}; its log: {worker.text[-1500:]})")
            assert not all_over(db, ids) or all_done(db, ids), runs_now(db, ids)
            time.sleep(rng.uniform(0.0, 0.5))
            working = not all_done(db, ids)
            worker.kill()
            kills += working  # a kill with runs left to finish
        last = upcoming.wait_ready()
        wait_until(lambda: all_done(db, ids), timeout=180, what="every run done")
        assert last.stop() == 0
    finally:
        worker.kill()
        upcoming.kill()
        stop.set()
        answering.join(10)
        db.close()
    db = Database(url)
    try:
        report = audit(db, steps)
        assert (report.done, report.escalations, report.lost, report.doubled, report.misrouted) == (5, 10, 0, 0, 0), report
        assert kills >= 1
    finally:
        db.close()


def all_done(db: Database, ids: list[str]) -> bool:
    return all(db.get_run(i)["status"] == "done" for i in ids)


def all_over(db: Database, ids: list[str]) -> bool:
    return all(db.get_run(i)["status"] not in ("running", "waiting", "parked", "queued") for i in ids)


def runs_now(db: Database, ids: list[str]) -> str:
    """Each run's status, owner and error, for a failure's message."""
    rows = [db.get_run(i) for i in ids]
    return "; ".join(f"{r['run_id']} {r['status']} {r['owner'] or '-'} {r['error'] or ''}".strip() for r in rows)


def steps_begun(steps: Path, pid: int) -> int:
    """The steps process `pid` began (ESCALATE_STEP_AUDIT's lines end with their process id)."""
    lines = steps.read_text().splitlines() if steps.exists() else []
    return sum('"kind": "live"' in line and line.endswith(f'"pid": {pid}}}') for line in lines)


def _dead_owner() -> str:
    """An owner id naming a process of this host that no longer exists."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    return f"{socket.gethostname()}-{gone.pid}-deadbeef"


def test_a_claimer_killed_between_its_claim_and_the_queue_is_finished_by_a_worker(tmp_path: Path) -> None:
    """The window of `kill -9` inside a requeue, made exactly: the run's row says claimed back
    (queued, by a process now gone) while its workflow is still off the queue. A worker's poll
    puts it on the queue once, and it is continued."""
    from engine.durable import parking

    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    steps, env = steps_env(tmp_path)
    worker = WorkerProcess(url, tmp_path, concurrency=1, name="first", env=env)
    db = Database(url)
    second: WorkerProcess | None = None
    try:
        worker.wait_ready()
        (run_id,) = queue_runs(tmp_path, url, 1)
        wait_until(lambda: waiting_runs(db) == {run_id}, what="the run parked")
        assert worker.stop() == 0  # nobody to wake it: the claim below is the only one
        (row,) = db.pending_escalations()
        assert answer_directly(db, row)
        assert parking.claim_ready(db, run_id, _dead_owner())  # the claimer dies here
        second = WorkerProcess(url, tmp_path, concurrency=1, name="second", env=env).wait_ready()
        wait_until(lambda: bool(db.pending_escalations()), what="the run continued to its second question")
        (row,) = db.pending_escalations()
        assert answer_directly(db, row)
        wait_until(lambda: db.get_run(run_id)["status"] == "done", what="the run done")
        assert f"{run_id}: continued" in second.text
        report = audit(db, steps)
        assert (report.done, report.lost, report.doubled, report.misrouted) == (1, 0, 0, 0), report
        assert second.stop() == 0
    finally:
        worker.kill()
        if second is not None:
            second.kill()
        db.close()


def test_resume_continues_a_parked_run_here(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    worker = WorkerProcess(url, tmp_path, concurrency=1)
    db = Database(url)
    try:
        worker.wait_ready()
        (run_id,) = queue_runs(tmp_path, url, 1)
        wait_until(lambda: waiting_runs(db) == {run_id}, what="the run parked")
        assert worker.stop() == 0
        answers = tmp_path / "answers.yaml"
        answers.write_text("- responseType: option\n  selectedOption: keep\n- responseType: text\n  textResponse: fine\n")
        resumed = escalate("resume", run_id, "--answers", str(answers), "--db", url, cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        row = db.get_run(run_id)
        assert (row["status"], json.loads(row["result"])) == ("done", "built | fine")
    finally:
        worker.kill()
        db.close()
