"""Kill `escalate run` / `escalate resume` with SIGKILL at random points and continue the run
until it ends; then audit it: the result, one decision per escalation, no finished step run
again. Used by tests/durable/test_crash.py (a few dozen kills) and by
tests/benchmarks/bench_durable.py (a thousand).

`kill_while_finishing`: an `escalate worker` with many answered runs, killed while they finish
their last turns; every run that the database says finished must have its whole event log (a
finished run is never replayed, so what its log lacks then stays lacking)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from engine.durable.database import Database
from engine.durable.decisions import DecisionStore, pending_from_json
from engine.escalation.broker import APPROVE
from engine.kernel.model import Decision, Origin, ResolvedBy, Response, ResponseType, escalation_digest

DATA = Path(__file__).parent / "data"
EXPECTED = "first done | second done | ship it"
FINISH = DATA / "finish.sr"  # a question, then three agent turns (tests/durable/data/finish.yaml)
FINISH_TURNS = 3


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


def runs_until_killed(workdir: Path, kills: int, rng: random.Random, *,
                      new_db: Callable[[], str | None] = lambda: None, most_runs: int = 5) -> list[Report]:
    """Runs with kills until `kills` have landed: a process may finish its run before its kill's
    moment comes (the moments are drawn up to 2.5 s after a start, and a continuation can be
    quicker), and the kills still due then land on a new run, on a new database (`new_db`; None:
    a SQLite file of the run's own folder). Each run's report, to be checked."""
    reports: list[Report] = []
    landed = 0
    while landed < kills:
        assert len(reports) < most_runs, f"{len(reports)} runs ended before {kills} kills landed ({landed})"
        reports.append(run_with_kills(workdir / f"run{len(reports)}", kills=kills - landed, rng=rng, db_url=new_db()))
        landed += reports[-1].kills
    return reports


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
    repeated, report.steps_in_flight_rerun = steps_audit(audit)
    report.steps_repeated = len(repeated)
    ran = workdir / "ran.txt"
    report.commands_run = ran.read_text(encoding="utf-8").split() if ran.exists() else []


def steps_audit(audit: Path) -> tuple[list[str], int]:
    """From ESCALATE_STEP_AUDIT's file: the keys of steps executed again after their result was
    recorded (each time), and how many executions repeated a step not recorded yet (in flight
    at a kill: allowed)."""
    recorded: set[str] = set()
    seen_live: set[str] = set()
    repeated: list[str] = []
    in_flight = 0
    if not audit.exists():
        return repeated, in_flight
    for line in audit.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        key = entry["key"]
        if entry["kind"] == "recorded":
            recorded.add(key)
        elif key in recorded:
            repeated.append(key)
        elif key in seen_live:
            in_flight += 1
        else:
            seen_live.add(key)
    return repeated, in_flight


@dataclass
class FinishReport:
    runs: int = 0
    finished_before_kill: int = 0  # runs the database said were over when the worker died
    lost_events: list[str] = field(default_factory=list)  # those whose event log is not whole: why
    finished_after: int = 0  # runs over once a second worker continued the others
    lost_after: list[str] = field(default_factory=list)


def kill_while_finishing(workdir: Path, rng: random.Random, *, runs: int = 20, timeout: float = 300.0) -> FinishReport:
    """Queue `runs` runs of finish.sr, let one worker bring all to their question, answer them
    all at once, SIGKILL the worker 0-0.3 s after the first run is over (while the others finish
    their last turns),
    audit the runs that were over; then let a new worker end the rest and audit them all."""
    workdir.mkdir(parents=True, exist_ok=True)
    db_url = f"sqlite:///{workdir / 'escalate.db'}"
    report = FinishReport(runs=runs)
    ids = _queue_elsewhere(db_url, workdir, runs)
    db = Database(db_url)
    try:
        worker = _worker(db_url, workdir, runs)
        try:
            _wait(lambda: len(db.pending_escalations()) == runs, timeout, "every run at its question")
            answered = answer_pending(db)
            assert answered == runs, answered
            # The first run over: the others are finishing their last turns now.
            _wait(lambda: any(r["status"] == "done" for r in db.list_runs(include_finished=True)), timeout,
                  "a first run done")
            time.sleep(rng.uniform(0.0, 0.3))
        finally:
            worker.kill()
            worker.wait()
        over = [r for r in db.list_runs(include_finished=True) if r["status"] == "done"]
        report.finished_before_kill = len(over)
        report.lost_events = [f"{r['run_id']}: {why}" for r in over if (why := _events_not_whole(db, r["run_id"]))]
        worker = _worker(db_url, workdir, runs)
        try:
            _wait(lambda: all(r["status"] == "done" for r in db.list_runs(include_finished=True)), timeout,
                  "every run done after the kill")
        finally:
            worker.terminate()
            worker.wait(60)
        report.finished_after = sum(1 for r in db.list_runs(include_finished=True) if r["status"] == "done")
        report.lost_after = [f"{i}: {why}" for i in ids if (why := _events_not_whole(db, i))]
    finally:
        db.close()
    return report


def _events_not_whole(db: Database, run_id: str) -> str | None:
    """Why this finished run's log is not the whole log of a finish.sr run (None: it is): its
    question and decision once, FINISH_TURNS agent results, the flow's result last, nothing twice."""
    events = db.events_of(run_id)
    types = [e["type"] for e in events]
    if types.count("human_escalation") != 1 or types.count("decision") != 1:
        return f"question/decision events: {types}"
    if types.count("agent_result") != FINISH_TURNS:
        return f"{types.count('agent_result')} agent results of {FINISH_TURNS}: {types}"
    if types.count("flow_result") != 1 or types[-1] != "flow_result":
        return f"no flow_result at the end: {types}"
    seen = [json.dumps(e, sort_keys=True) for e in events]
    if len(set(seen)) != len(seen):
        return f"an event recorded twice: {types}"
    return None


def _worker(db_url: str, workdir: Path, concurrency: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "worker", "--db", db_url, "--concurrency", str(concurrency)],
                            cwd=workdir, stdout=subprocess.DEVNULL, stderr=(workdir / "worker.err").open("ab"))
    return proc


def _wait(done: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"not reached in {timeout:g} s: {what}")
        time.sleep(0.02)


def _queue_elsewhere(db_url: str, workdir: Path, count: int) -> list[str]:
    return queue_runs(db_url, workdir, FINISH, DATA / "finish.yaml", None, count)


def queue_runs(db_url: str, workdir: Path, workflow: Path, script: Path, rules: Path | None, count: int) -> list[str]:
    """`run --detach` `count` times (inputs n0, n1, ...), in this process (a process of its own
    cost a second of CPU and seconds of a loaded host's time, and queueing is not what its
    callers test); from a thread running no event loop."""
    async def queue() -> list[str]:
        from engine.runtime.script import load_script
        from engine.services import open_services
        from rules import load_rules

        services = await open_services(db_url, identity="escalate run")
        engine = services.engine(load_rules(rules), script=load_script(script), workspace=workdir)
        try:
            loaded = engine.load(workflow)
            return [engine.queue_run(loaded, input=f"n{i}", task=workflow.stem) for i in range(count)]
        finally:
            services.close()

    return asyncio.run(queue())
