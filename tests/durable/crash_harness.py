"""Kill `escalate run` / `escalate resume` with SIGKILL at random points and continue the run
until it ends; then audit it: the result, one decision per escalation, no finished step run
again. Used by tests/durable/test_crash.py (a few dozen kills) and by
tests/benchmarks/bench_durable.py (a thousand)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from engine.durable.database import Database
from engine.durable.decisions import DecisionStore, pending_from_json
from engine.escalation.broker import APPROVE
from engine.escalation.model import Decision, Origin, ResolvedBy, Response, ResponseType, escalation_digest

DATA = Path(__file__).parent / "data"
EXPECTED = "first done | second done | ship it"


@dataclass
class Report:
    result: str | None = None
    exit_code: int | None = None
    kills: int = 0
    starts: int = 0
    escalations: int = 0
    decisions_missing: int = 0  # escalations of the finished run without a decision
    decision_events_doubled: int = 0  # escalations with more than one `decision` event
    steps_repeated: int = 0  # a step executed live again after its result was recorded
    steps_in_flight_rerun: int = 0  # a step executed again that had not been recorded (allowed)
    commands_run: list[str] = field(default_factory=list)


def answer_for(pending: object) -> Response:
    esc = pending.escalation  # type: ignore[attr-defined]
    if esc.origin is Origin.TOOL_APPROVAL:
        return Response(ResponseType.OPTION, selected_option=APPROVE)
    if esc.options:
        return Response(ResponseType.OPTION, selected_option="keep")
    return Response(ResponseType.TEXT, text_response="ship it")


def answer_pending(db: Database) -> int:
    """Answer every pending escalation as a person would (first writer wins, like the CLI)."""
    store = DecisionStore(db)
    answered = 0
    for row in db.pending_escalations():
        pending = pending_from_json(row["payload"])
        decision = Decision(row["id"], answer_for(pending), ResolvedBy.HUMAN, time.time(), digest=escalation_digest(pending))
        if store.decide(decision) is decision:
            answered += 1
    return answered


def _command(workdir: Path, db_url: str, run_id: str | None) -> list[str]:
    base = [sys.executable, "-m", "engine"]
    if run_id is None:
        return [*base, "run", str(DATA / "crash.sr"), "--script", str(DATA / "crash.yaml"), "--rules",
                str(DATA / "crash-rules.yaml"), "--input", "go", "--db", db_url, "--wait"]
    return [*base, "resume", run_id, "--db", db_url, "--wait"]


def run_with_kills(workdir: Path, kills: int, rng: random.Random, *, max_delay: float = 2.5,
                   timeout: float = 600.0, db_url: str | None = None) -> Report:
    """One run, killed `kills` times at random moments, continued each time until it ends
    (on `db_url`, by default a new SQLite file in `workdir`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    db_url = db_url or f"sqlite:///{workdir / 'escalate.db'}"
    audit = workdir / "steps.jsonl"
    env = {**os.environ, "ESCALATE_STEP_AUDIT": str(audit), "PYTHONDONTWRITEBYTECODE": "0"}
    report = Report()
    db = Database(db_url)
    run_id: str | None = None
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            proc = subprocess.Popen(_command(workdir, db_url, run_id), cwd=workdir, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            report.starts += 1
            kill_at = time.monotonic() + rng.uniform(0.05, max_delay) if report.kills < kills else None
            while proc.poll() is None:
                if run_id is None:
                    runs = db.list_runs(include_finished=True)
                    run_id = runs[0]["run_id"] if runs else None
                if answer_pending(db) and kill_at is not None and rng.random() < 0.3:
                    kill_at = time.monotonic() + rng.uniform(0.0, 0.05)  # between an answer and the next turn
                if kill_at is not None and time.monotonic() >= kill_at:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    report.kills += 1
                    break
                time.sleep(0.01)
            out, err = proc.communicate()
            if proc.returncode == -signal.SIGKILL:
                continue
            report.exit_code = proc.returncode
            report.result = out.strip() if proc.returncode == 0 else err.strip()
            break
        _audit(report, db, run_id, audit, workdir)
    finally:
        db.close()
    return report


def _audit(report: Report, db: Database, run_id: str | None, audit: Path, workdir: Path) -> None:
    if run_id is None:
        return
    escalations = db.escalations_of(run_id)
    report.escalations = len(escalations)
    report.decisions_missing = sum(1 for e in escalations if e["status"] != "decided")
    decided: dict[str, int] = {}
    for event in db.events_of(run_id):
        if event["type"] == "decision":
            decided[event["id"]] = decided.get(event["id"], 0) + 1
    report.decision_events_doubled = sum(1 for n in decided.values() if n > 1)
    recorded: set[str] = set()
    seen_live: set[str] = set()
    if audit.exists():
        for line in audit.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            key = entry["key"]
            if entry["kind"] == "recorded":
                recorded.add(key)
            elif key in recorded:
                report.steps_repeated += 1
            elif key in seen_live:
                report.steps_in_flight_rerun += 1
            else:
                seen_live.add(key)
    ran = workdir / "ran.txt"
    report.commands_run = ran.read_text(encoding="utf-8").split() if ran.exists() else []
