"""`escalate runs`, `answer`, `resume` and `run --wait` on one database: `run` and `resume` as real
processes, and the answers that race; what `runs` and `answer` say and return is read in this
process (tests/cli_here.py), the database the same file."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.cli_here import escalate_here

DATA = Path(__file__).parent / "data"
DEMO = Path(__file__).parents[2] / "engine" / "demo"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture(autouse=True)
def default_database(tmp_path, monkeypatch) -> None:
    """No --db and no $ESCALATE_DB: the default, .escalate/escalate.db under the current folder."""
    monkeypatch.delenv("ESCALATE_DB", raising=False)


def escalate(cwd: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def start(cwd: Path, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "engine", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def auth_run(cwd: Path, *extra: str) -> list[str]:
    return ["run", str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"), "--input", "Fix login", *extra]


def pending(cwd: Path) -> list[dict]:
    listed = json.loads(escalate_here("runs", "--format", "json", cwd=cwd).stdout)
    return [p for run in listed for p in run["pending"]]


def wait_for_pending(cwd: Path, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        db = Database(f"sqlite:///{cwd / '.escalate' / 'escalate.db'}") if (cwd / ".escalate").exists() else None
        rows = db.pending_escalations() if db else []
        if db:
            db.close()
        if rows:
            return rows[0]
        time.sleep(0.1)
    raise AssertionError("no escalation was raised")


def test_exit_4_leaves_the_run_waiting_then_answer_and_resume_finish_it(tmp_path) -> None:
    first = escalate(tmp_path, *auth_run(tmp_path))
    assert first.returncode == 4, first.stderr
    run_id = first.stderr.splitlines()[0].removeprefix("run ")
    listed = json.loads(escalate_here("runs", "--format", "json", cwd=tmp_path).stdout)
    assert [(r["run_id"], r["status"], r["task"]) for r in listed] == [(run_id, "waiting", "auth-refactor")]  # its process is gone; it waits for a person
    (esc,) = listed[0]["pending"]
    assert esc["reason"] == "architecture_decision" and esc["deadline"] is None

    # Refused answers change nothing.
    unknown = escalate_here("answer", "nope.1", "--skip", cwd=tmp_path)
    wrong = escalate_here("answer", esc["id"], "--option", "nope", cwd=tmp_path)
    approve = escalate_here("answer", esc["id"], "--approve", cwd=tmp_path)
    assert unknown.returncode == 1
    assert wrong.returncode == 2 and "not offered" in wrong.stderr
    assert approve.returncode == 2  # not a tool approval
    ok = escalate_here("answer", esc["id"], "--option", "jwt", "--instructions", "keep the cookie", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    again = escalate_here("answer", esc["id"], "--skip", cwd=tmp_path)
    assert again.returncode == 1 and "already decided by human" in again.stderr

    events = tmp_path / "events.jsonl"
    resumed = escalate(tmp_path, "resume", run_id, "--events", str(events))
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("Plan: move auth to JWT")
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["type"] for e in lines].count("human_escalation") == 1  # raised once, before the crash
    (decision,) = [e for e in lines if e["type"] == "decision"]
    assert (decision["selectedOption"], decision["resolvedBy"], decision["additionalInstructions"]) == ("jwt", "human", "keep the cookie")
    waiting = escalate_here("runs", "--format", "json", cwd=tmp_path)
    every = escalate_here("runs", "--all", "--format", "json", cwd=tmp_path)
    again = escalate_here("resume", run_id, cwd=tmp_path)
    assert waiting.stdout.strip() == "[]"
    assert json.loads(every.stdout)[0]["status"] == "done"
    assert again.stdout.startswith("Plan: move auth to JWT")  # a finished run resumed again reports how it ended


def test_two_processes_answering_at_once_one_wins_the_other_is_told(tmp_path) -> None:
    assert escalate(tmp_path, *auth_run(tmp_path)).returncode == 4
    (esc,) = pending(tmp_path)
    for _ in range(3):  # the race, started together
        racers = [start(tmp_path, "answer", esc["id"], "--option", option) for option in ("jwt", "sessions")]
        results = [(p.wait(timeout=60), p.communicate()) for p in racers]
        codes = sorted(code for code, _ in results)
        if codes == [0, 1]:
            break
        assert codes == [1, 1]  # decided by an earlier round
    assert codes in ([0, 1], [1, 1])
    loser = next(err for code, (_, err) in results if code == 1)
    assert "already decided by human" in loser
    db = Database(f"sqlite:///{tmp_path / '.escalate' / 'escalate.db'}")
    try:
        (row,) = db.escalations_of(esc["id"].rsplit(".", 1)[0])
        assert row["status"] == "decided" and row["decision"]["selectedOption"] in ("jwt", "sessions")
    finally:
        db.close()


def test_run_wait_is_answered_from_another_terminal(tmp_path) -> None:
    waiting = start(tmp_path, *auth_run(tmp_path, "--wait"))
    try:
        esc = wait_for_pending(tmp_path)
        answered = escalate_here("answer", esc["id"], "--option", "sessions", cwd=tmp_path)
        assert answered.returncode == 0, answered.stderr
        out, err = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
    assert waiting.returncode == 0, err
    assert "escalate answer " + esc["id"] in err
    assert out.strip()


def test_a_deadline_that_passed_while_nothing_ran_applies_its_default_once(tmp_path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("escalationRules:\n  defaults:\n    architecture_decision: {timeout: 2, onTimeout: continue}\n")
    waiting = start(tmp_path, *auth_run(tmp_path, "--wait", "--rules", str(rules)))
    esc = wait_for_pending(tmp_path)
    waiting.kill()
    waiting.wait()
    assert esc["deadline"] is not None
    time.sleep(max(0.0, esc["deadline"] - time.time()) + 0.5)
    run_id = esc["run_id"]
    resumed = escalate(tmp_path, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    db = Database(f"sqlite:///{tmp_path / '.escalate' / 'escalate.db'}")
    try:
        (row,) = db.escalations_of(run_id)
        assert (row["status"], row["resolved_by"]) == ("decided", "timeout_default")
        assert row["deadline"] == esc["deadline"]  # the original deadline, not a new one
        decisions = [e for e in db.events_of(run_id) if e["type"] == "decision"]
        assert len(decisions) == 1
    finally:
        db.close()


def test_a_use_child_waiting_on_a_person_survives_the_process(tmp_path) -> None:
    """The child's wait is the run's (flow level): exit 4, answer, resume: the child goes on."""
    from tests.escalation.test_child_waits import SCRIPT, USE_CHILD

    (tmp_path / "lead.sr").write_text(USE_CHILD)
    (tmp_path / "lead.yaml").write_text(SCRIPT)
    first = escalate(tmp_path, "run", "lead.sr", "--script", "lead.yaml")
    assert first.returncode == 4, first.stderr
    run_id = first.stderr.splitlines()[0].removeprefix("run ")
    (esc,) = pending(tmp_path)
    assert escalate_here("answer", esc["id"], "--option", "pg", cwd=tmp_path).returncode == 0
    resumed = escalate(tmp_path, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "lead done: helper said postgres"


def test_a_run_killed_before_its_workflow_started_starts_on_resume(tmp_path) -> None:
    """The window between recording a run and starting its DBOS workflow (a kill there left a
    run that `resume` could not continue; found by the 1,000-kill benchmark)."""
    db = Database(f"sqlite:///{tmp_path / '.escalate' / 'escalate.db'}")
    try:
        db.create_run(run_id="r0badbeef", task="auth-refactor", workflow="auth-refactor", path=str(DEMO / "auth-refactor.sr"),
                      flow=None, input="Fix login", script=str(DEMO / "auth-refactor.yaml"), rules=None,
                      workspace=str(tmp_path), status="running", started=time.time(), owner="gone-1-x", heartbeat=None)
    finally:
        db.close()
    answers = tmp_path / "answers.yaml"
    answers.write_text("- responseType: option\n  selectedOption: jwt\n")
    resumed = escalate(tmp_path, "resume", "r0badbeef", "--answers", str(answers))
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("Plan: move auth to JWT")
