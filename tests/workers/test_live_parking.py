"""A process that holds its runs live (`run --wait`, a console's services) parks a run that waits for
a person past PARK_LIVE_AFTER: its execution ends and only rows stay, held by that process. On the
decision (another process's `escalate answer`, or its own broker: a pane, a rule, a deadline) the
same process claims it back and continues it from its recorded steps, with the same handle. Real
`escalate run --wait`, `answer`, `worker` and `resume` processes, real SQLite files and a real
PostgreSQL server, SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.workers.procs import ASK, ASK_SCRIPT, WorkerProcess, answer_args, answer_directly, audit, escalate, expected_result
from tests.workers.test_workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]



def live_env(tmp_path: Path) -> dict[str, str]:
    """Parking after 0.3 s (not 2 s), and every step's execution logged (ESCALATE_STEP_AUDIT)."""
    return {**os.environ, "ESCALATE_PARK_LIVE_AFTER": "0.3", "ESCALATE_STEP_AUDIT": str(tmp_path / "steps.jsonl")}


def run_wait(url: str, cwd: Path, env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "engine", "run", str(ASK), "--script", str(ASK_SCRIPT), "--input", "go",
                             "--db", url, "--wait", "--events", str(cwd / "events.jsonl"), *extra],
                            cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def held_by(db: Database, pid: int) -> dict | None:
    """The one pending escalation of a run parked and held by process `pid` (owner HOST-PID-RANDOM)."""
    for row in db.pending_escalations():
        run = db.get_run(row["run_id"])
        if run is not None and run["status"] == "parked" and f"-{pid}-" in (run["owner"] or ""):
            return row
    return None


def parked_row(db: Database, pid: int, proc: subprocess.Popen[str]) -> dict:
    found: list[dict] = []

    def parked() -> bool:
        assert proc.poll() is None, proc.communicate()[1]
        row = held_by(db, pid)
        found[:] = [row] if row else []
        return bool(found)

    wait_until(parked, timeout=120, what="the run parked, held by its `run --wait` process")
    return found[0]


def test_run_wait_parks_and_continues_in_the_same_process_on_answers_from_another(tmp_path: Path, any_url: str) -> None:
    env = live_env(tmp_path)
    db = Database(any_url)
    proc = run_wait(any_url, tmp_path, env)
    try:
        for _ in range(2):  # the agent's question, then the flow's: each parks, each is answered elsewhere
            row = parked_row(db, proc.pid, proc)
            answered = escalate(*answer_args(row), "--db", any_url, cwd=tmp_path, env=env)
            assert answered.returncode == 0, answered.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    try:
        run_id = err.splitlines()[0].removeprefix("run ")
        assert proc.returncode == 0, err
        assert out.strip() == expected_result(run_id)  # the result, printed by the process that held the run
        assert err.count("waiting on a human") == 2  # each question said once: the replays said none again
        report = audit(db, tmp_path / "steps.jsonl")
        assert (report.done, report.escalations, report.lost, report.doubled, report.misrouted) == (1, 2, 0, 0, 0), report
        assert (tmp_path / "ran.txt").read_text().split() == ["ran"]  # the command between the questions, once
        stored = [(e["type"], e.get("id")) for e in db.events_of(run_id)]
        shown = [(e["type"], e.get("id")) for e in map(json.loads, (tmp_path / "events.jsonl").read_text().splitlines())]
        assert shown == stored  # --events: the run's log once, nothing doubled by the replays
        assert [t for t, _ in stored].count("decision") == 2
    finally:
        db.close()


def test_a_run_parked_in_run_wait_keeps_no_queue_polled_and_still_goes_on_there(tmp_path: Path) -> None:
    """While its run is parked, `run --wait` has no queue of its own in DBOS's `queues` table: no
    DBOS thread polls one for it (a registered queue is polled ten times a second: the process's
    whole idle CPU). An answer from another process still brings the run back to that process."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    env = live_env(tmp_path)
    db = Database(url)
    proc = run_wait(url, tmp_path, env)
    try:
        row = parked_row(db, proc.pid, proc)
        owner = db.get_run(row["run_id"])["owner"]
        with sqlite3.connect(tmp_path / "escalate.db") as conn:
            queues = [name for (name,) in conn.execute("SELECT name FROM queues")]
        assert f"escalate-{owner}" not in queues, queues
        for _ in range(2):
            answered = escalate(*answer_args(row), "--db", url, cwd=tmp_path, env=env)
            assert answered.returncode == 0, answered.stderr
            if _ == 0:
                row = parked_row_other_than(db, proc, row["id"])
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out.strip() == expected_result(row["run_id"])  # continued and ended in the process that held it
    finally:
        if proc.poll() is None:
            proc.kill()
        db.close()


def parked_row_other_than(db: Database, proc: subprocess.Popen[str], esc_id: str) -> dict:
    found: list[dict] = []

    def parked_again() -> bool:
        assert proc.poll() is None, proc.communicate()[1]
        row = held_by(db, proc.pid)
        found[:] = [row] if row is not None and row["id"] != esc_id else []
        return bool(found)

    wait_until(parked_again, timeout=120, what="the run parked again at its next question")
    return found[0]


def test_a_deadline_passing_while_parked_in_a_live_process_applies_its_default_once(tmp_path: Path) -> None:
    """The held run's deadline is timed by its process's broker, and a worker's poll applies the
    defaults of parked runs too: whoever is first, once. The worker leaves the run to its holder."""
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    env = live_env(tmp_path)
    rules = tmp_path / "rules.yaml"
    # 8 s: the run parks 0.3 s after it asks; the rest is room for a loaded host to see it parked first
    rules.write_text("escalationRules:\n  defaults:\n    architecture_decision: {timeout: 8, onTimeout: recommended}\n")
    db = Database(url)
    worker = WorkerProcess(url, tmp_path, concurrency=1, env=env)
    proc = run_wait(url, tmp_path, env, "--rules", str(rules))
    try:
        worker.wait_ready()
        first = parked_row(db, proc.pid, proc)
        assert first["deadline"] is not None and first["deadline"] > time.time()  # parked before its deadline
        second: dict | None = None

        def asks_again() -> bool:
            nonlocal second
            second = held_by(db, proc.pid)
            return second is not None and second["id"] != first["id"]

        wait_until(asks_again, timeout=120, what="the default applied and the run parked again at its second question")
        assert second is not None and answer_directly(db, second)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        run_id = first["run_id"]
        assert out.strip() == expected_result(run_id)  # continued by its holder, not by the worker
        assert f"{run_id}: continued" not in worker.text
        row = db.get_escalation(first["id"])
        assert (row["status"], row["resolved_by"], row["decision"]["selectedOption"]) == ("decided", "timeout_default", "keep")
        decisions = [e["id"] for e in db.events_of(run_id) if e["type"] == "decision"]
        assert decisions == [first["id"], second["id"]]  # the default once
        assert worker.stop() == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        worker.kill()
        db.close()


@pytest.mark.parametrize("continuer", ["worker", "resume"])
def test_kill_9_of_the_holding_process_while_its_run_is_parked(tmp_path: Path, continuer: str) -> None:
    """`run --wait` SIGKILLed while its run is parked, held by it: the decision is made, then a
    worker (its holder is gone) or a later `escalate resume` continues the run from its rows:
    nothing lost, nothing doubled, no finished step run again."""
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    env = live_env(tmp_path)
    db = Database(url)
    proc = run_wait(url, tmp_path, env)
    worker: WorkerProcess | None = None
    try:
        first = parked_row(db, proc.pid, proc)
        run_id = first["run_id"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert escalate(*answer_args(first), "--db", url, cwd=tmp_path, env=env).returncode == 0
        if continuer == "worker":
            worker = WorkerProcess(url, tmp_path, concurrency=1, env=env).wait_ready()
            wait_until(lambda: any(r["id"] != first["id"] for r in db.pending_escalations()), timeout=120,
                       what="the worker continued the run to its second question")
            (second,) = db.pending_escalations()
            assert answer_directly(db, second)
            wait_until(lambda: db.get_run(run_id)["status"] == "done", timeout=120, what="the run done")
            assert worker.stop() == 0
        else:
            answers = tmp_path / "answers.yaml"
            answers.write_text(f"- responseType: text\n  textResponse: ship {run_id}\n")
            resumed = escalate("resume", run_id, "--answers", str(answers), "--db", url, cwd=tmp_path, env=env)
            assert resumed.returncode == 0, resumed.stderr
            assert resumed.stdout.strip() == expected_result(run_id)
        report = audit(db, tmp_path / "steps.jsonl")
        assert (report.done, report.escalations, report.lost, report.doubled, report.misrouted) == (1, 2, 0, 0, 0), report
        assert (tmp_path / "ran.txt").read_text().split() == ["ran"]
    finally:
        if proc.poll() is None:
            proc.kill()
        if worker is not None:
            worker.kill()
        db.close()


async def test_a_console_opening_after_the_holder_was_killed_continues_its_parked_run(tmp_path: Path) -> None:
    """Before parking, a killed `run --wait` left an active run that the next console took over at
    its open; parked and held by a process now gone, it is still the console's to continue."""
    from tests.tui.helpers import SIZE, make_app, make_session
    from tests.tui.helpers import wait_until as pilot_until
    from engine.kernel.clock import RealClock

    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    db = Database(url)
    proc = run_wait(url, tmp_path, live_env(tmp_path))
    try:
        first = parked_row(db, proc.pid, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        run_id = first["run_id"]
        session = make_session([ASK], clock=RealClock(), db_url=url, workspace=tmp_path)
        app = make_app(session, open_engine=True)
        async with app.run_test(size=SIZE) as pilot:
            await pilot_until(pilot, lambda: session.run(run_id) is not None, 60, "the console continuing the run")
            assert session.answer(first["id"], answer_for_row(first)) is not None
            await pilot_until(pilot, lambda: any(p.escalation.id != first["id"] for p in session.pending()), 60,
                              "the run's second question")
            (second,) = session.pending()
            session.answer(second.escalation.id, answer_for_row(db.get_escalation(second.escalation.id)))
            handle = session.run(run_id)
            await pilot_until(pilot, lambda: handle.status.finished, 60, "the run's end")
            assert (handle.status.value, handle.result) == ("done", expected_result(run_id))
            await pilot.press("q")  # nothing left: quits without asking
            await pilot.pause()
    finally:
        if proc.poll() is None:
            proc.kill()
        db.close()


def answer_for_row(row: dict):
    from tests.workers.procs import answer_for

    return answer_for(row)
