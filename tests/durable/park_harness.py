"""Kill `escalate worker` processes with SIGKILL while their runs park, while decisions from
`escalate answer` processes requeue them, while workers continue them, and while a worker's
poll applies an overdue deadline's default; then audit everything. Used by
tests/durable/test_crash_parking.py (a few kills) and tests/benchmarks/bench_durable.py
(hundreds).

The runs (tests/durable/data/park.sr) ask three decisions each: an agent's (a deadline: its
recommended `keep` is applied when nobody answers in time), the flow's choice (a deadline too)
and the flow's text question (none). A person, here `escalate answer` processes started at
random moments (some killed too), answers `drop` to the first two, so that the result and the
log say who decided: a default (`Keep it`) or the person (`Drop it`).

Each kill aims at one moment (`KILL_POINTS`):
- `park`: the worker holding a run that waits, as its grace ends (PARKING_AFTER after the raise),
- `requeue`: a worker right after an answer was written (it hears the news, claims the run back
  and puts it on the queue),
- `continue`: the worker executing a run that was parked and requeued (it replays and goes on),
- `sweep`: a worker around a parked run's deadline (its poll applies the default); or every
  worker before it, so that it passes while nothing runs, and a new worker's poll applies it,
- `random`: anywhere.

Checked after each kill (what must hold at any moment): each run's stored events are a prefix of
the log an uninterrupted run writes (nothing lost in between, nothing twice), each decision event
is its escalation's decision and appears once, no default applied before its deadline, no step
recorded finished executed again. At the end: every run done with the result its decisions give,
its whole log, every escalation decided once (every passed deadline's default applied once),
nothing left pending, parked, queued or unfinished in DBOS."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from engine.durable.database import Database, escalations, events
from engine.durable.decisions import pending_from_json
from tests.durable.crash_harness import queue_runs, steps_audit

DATA = Path(__file__).parent / "data"
PARK = DATA / "park.sr"
PARK_SCRIPT = DATA / "park.yaml"
PARK_RULES = DATA / "park-rules.yaml"
DEADLINE = 4.0  # park-rules.yaml: both deadlines
PARKING_AFTER = 2.0  # engine/services/parking.py PARK_AFTER, as the harness aims at it
SETTLE = 900.0  # after the last kill, the seconds a loaded host (nice 19 under load 40+) may take to end every run
KILL_POINTS = ("park", "requeue", "continue", "sweep", "random")
OVER = ("done", "failed", "stopped", "aborted", "cancelled")  # a run that ends otherwise than done is audited as wrong
FINISH_WAIT = 60.0  # s: a worker that opens finishes the workflows left PENDING by one killed at a run's end
# The log of an uninterrupted run of park.sr, by event type.
LOG = ("agent_call", "human_escalation", "decision", "tool_call", "log", "agent_result",
       "human_escalation", "decision", "human_escalation", "decision", "flow_result")


@dataclass
class ParkReport:
    runs: int = 0
    kills: int = 0
    kill_points: Counter[str] = field(default_factory=Counter)
    answers: int = 0  # decisions written by `escalate answer`
    answers_killed: int = 0  # `escalate answer` processes killed (their decision given again)
    answers_failed: int = 0  # `escalate answer` exits 2 (a database locked too long): given again
    defaults: int = 0  # escalations decided by their deadline's default
    defaults_with_no_worker: int = 0  # ... whose deadline passed while no worker ran
    checks: int = 0  # audits made after a kill
    done: int = 0
    wrong_results: int = 0
    events_lost: int = 0  # a run's stored log is not a prefix of (or, done, not) the whole log
    events_doubled: int = 0
    decisions_lost: int = 0  # an escalation of a finished run undecided, or a decision without its event
    decisions_doubled: int = 0  # a decision event twice, or one that is not its escalation's decision
    defaults_early: int = 0  # a default applied before its deadline
    steps_repeated: int = 0  # a step executed again after its result was recorded
    steps_in_flight_rerun: int = 0  # a step executed again that had not been recorded (allowed)
    left_pending: int = 0  # at the end: a run not done, an escalation pending, a workflow unfinished
    worker_faults: int = 0  # a worker that wrote a traceback, a round stalled, a worker deaf to SIGTERM
    problems: list[str] = field(default_factory=list)  # what each count above is, in words
    seconds: float = 0.0
    _seen: set[str] = field(default_factory=set, repr=False)

    def problem(self, count: str, key: str, text: str) -> None:
        """Count a problem once, however many audits see it again."""
        if key not in self._seen:
            self._seen.add(key)
            setattr(self, count, getattr(self, count) + 1)
            self.problems.append(text)

    @property
    def clean(self) -> bool:
        return not (self.wrong_results or self.events_lost or self.events_doubled or self.decisions_lost
                    or self.decisions_doubled or self.defaults_early or self.steps_repeated or self.left_pending
                    or self.worker_faults)


class _Workers:
    """The `escalate worker` processes of one harness round, by their owner id."""

    def __init__(self, db_url: str, workdir: Path, env: dict[str, str], concurrency: int) -> None:
        self.db_url, self.workdir, self.env, self.concurrency = db_url, workdir, env, concurrency
        self.procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.started = 0

    def start(self) -> None:
        self.started += 1
        log = self.workdir / f"worker{self.started}.err"
        proc = subprocess.Popen([sys.executable, "-m", "engine", "worker", "--db", self.db_url, "--concurrency",
                                 str(self.concurrency)], cwd=self.workdir, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=log.open("wb"))
        self.procs.append((proc, log))

    def alive(self) -> list[subprocess.Popen[bytes]]:
        return [proc for proc, _ in self.procs if proc.poll() is None]

    def ready(self) -> list[subprocess.Popen[bytes]]:
        """The live workers that have started taking runs (a kill aimed at a run's moment, not
        at a worker's start)."""
        return [proc for proc, log in self.procs if proc.poll() is None and log.read_text(errors="replace").startswith("worker ")]

    def of(self, owner: str | None) -> subprocess.Popen[bytes] | None:
        """The live worker whose owner id is `owner` (its first line: `worker OWNER: taking ...`)."""
        for proc, log in self.procs:
            if owner and proc.poll() is None and log.read_text(errors="replace").startswith(f"worker {owner}:"):
                return proc
        return None

    def kill(self, proc: subprocess.Popen[bytes]) -> bool:
        if proc.poll() is not None:
            return False
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True

    def stop_all(self) -> str:
        """SIGTERM to each; what the threads of those still running after 60 s were doing."""
        for proc in self.alive():
            proc.terminate()
        end = time.monotonic() + 60
        while self.alive() and time.monotonic() < end:
            time.sleep(0.1)
        return self.dump() if self.alive() else ""

    def dump(self) -> str:
        """Each live worker's threads (faulthandler, on SIGABRT: it dies), from its log."""
        dumped = []
        for proc, log in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGABRT)
                proc.wait()
                dumped.append(f"{log.name}: {log.read_text(errors='replace')[-6000:]}")
        return "\n".join(dumped)

    def errors(self) -> str:
        """Tracebacks the workers wrote (a worker must fail in one line, never a traceback)."""
        return "\n".join(log.read_text(errors="replace") for _, log in self.procs
                         if "Traceback" in log.read_text(errors="replace"))


def answer_args(row: dict[str, Any]) -> list[str]:
    """What the person answers: `drop` to a choice (its default is `keep`), `ship RUN` to the text."""
    esc = pending_from_json(row["payload"]).escalation
    if esc.options:
        return ["--option", "drop"]
    return ["--text", f"ship {esc.run_id}"]


def expected_result(run_id: str, escalation_rows: list[dict[str, Any]]) -> str:
    """park.sr's result for the decisions its rows hold: the flow's choice is `Keep it` when its
    default applied, `Drop it` when the person answered."""
    choice = next((r for r in escalation_rows if pending_from_json(r["payload"]).escalation.agent == "flow"
                   and pending_from_json(r["payload"]).escalation.options), None)
    picked = "Keep it" if choice is not None and choice["resolved_by"] == "timeout_default" else "Drop it"
    return f"built | {picked} | ship {run_id}"


def _over(db: Database) -> bool:
    return all(r["status"] in OVER for r in db.list_runs(include_finished=True))


def answer(db_url: str, workdir: Path, row: dict[str, Any]) -> int:
    """`escalate answer` for `row` as the person answers it, run in this process (its process
    boundary is not what the tests using it are about; the harness's own answers are processes,
    killed at random); its exit code."""
    from tests.cli_here import escalate_here

    return escalate_here("answer", row["id"], *answer_args(row), "--db", db_url, cwd=workdir).returncode


def answer_until_done(db: Database, db_url: str, workdir: Path, ids: list[str], timeout: float = 300.0) -> None:
    """Answer whatever waits until these runs are over (the workers running; the audit says how they ended)."""
    end = time.monotonic() + timeout
    while not all(db.get_run(i)["status"] in OVER for i in ids):
        if time.monotonic() > end:
            raise AssertionError(f"runs not done in {timeout:g} s: {[(r['run_id'], r['status']) for r in db.list_runs()]}")
        for row in db.pending_escalations(ids):
            assert answer(db_url, workdir, row) in (0, 1)  # 1: a default was first
        time.sleep(0.1)


def deadline_in(db: Database, esc_id: str, seconds: float) -> float:
    """Give a pending escalation a deadline `seconds` from now, in its row and its payload alike
    (as if its rules had given that timeout), so that it passes exactly when a test needs it to,
    not after a timeout long enough for a loaded host to park its run first. The new deadline."""
    deadline = time.time() + seconds
    with db.engine.begin() as c:
        payload = json.loads(c.execute(sa.select(escalations.c.payload).where(escalations.c.id == esc_id)).scalar_one())
        payload["policy"]["deadline"] = deadline
        c.execute(escalations.update().where(escalations.c.id == esc_id, escalations.c.status == "pending")
                  .values(deadline=deadline, payload=json.dumps(payload)))
    return deadline


def kill_while_parking(workdir: Path, rng: random.Random, *, runs: int = 4, kills: int = 10, workers: int = 2,
                       concurrency: int = 2, db_url: str | None = None, points: tuple[str, ...] | None = None,
                       timeout: float = 1800.0) -> ParkReport:
    """`runs` runs of park.sr queued for `workers` workers of `concurrency` places, killed
    `kills` times (each kill at one of `points`, in turn when given, else at random), answered
    by `escalate answer` processes, until every run is done; then audited."""
    started = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    db_url = db_url or f"sqlite:///{workdir / 'escalate.db'}"
    steps = workdir / "steps.jsonl"
    env = {**os.environ, "ESCALATE_STEP_AUDIT": str(steps), "PYTHONFAULTHANDLER": "1"}  # SIGABRT: threads dumped
    report = ParkReport(runs=runs)
    ids = queue_runs(db_url, workdir, PARK, PARK_SCRIPT, PARK_RULES, runs)
    report.runs = len(ids)
    db = Database(db_url)
    crew = _Workers(db_url, workdir, env, concurrency)
    round_ = _Round(db, db_url, workdir, env, crew, rng, report, steps)
    try:
        for _ in range(workers):
            crew.start()
        deadline = time.monotonic() + timeout
        plan = list(points) if points else None
        while report.kills < kills and time.monotonic() < deadline:
            point = plan[report.kills % len(plan)] if plan else rng.choice(KILL_POINTS)
            if round_.kill_at(point, deadline):
                report.kill_points[point] += 1
                report.kills += 1
                round_.audit.check(ids, final=False)
                for _ in range(workers - len(crew.alive())):
                    crew.start()
            if report.kills < kills and _over(db):
                ids += queue_runs(db_url, workdir, PARK, PARK_SCRIPT, PARK_RULES, runs)  # more to kill
                report.runs = len(ids)
        settle = time.monotonic() + SETTLE  # the kills over: every run ends by then, or it stalled
        while time.monotonic() < settle and not _over(db):
            round_.step()
        if not _over(db):  # stalled: what each live worker's threads were doing
            report.problem("worker_faults", "stalled", f"stalled; the live workers' threads: {crew.dump()}")
        round_.finish_answers()
        if hung := crew.stop_all():
            report.problem("worker_faults", "hung", f"workers still running 60 s after SIGTERM: {hung}")
        if round_.audit.ended_but_pending(ids):  # a worker killed at a run's end: the next one to open finishes it
            crew.start()
            until = time.monotonic() + FINISH_WAIT
            while round_.audit.ended_but_pending(ids) and time.monotonic() < until:
                time.sleep(0.2)
            if hung := crew.stop_all():
                report.problem("worker_faults", "hung", f"workers still running 60 s after SIGTERM: {hung}")
        round_.audit.check(ids, final=True)
        if errors := crew.errors():
            report.problem("worker_faults", "tracebacks", f"a worker wrote a traceback: {errors[-2000:]}")
    finally:
        round_.finish_answers()
        for proc in crew.alive():
            crew.kill(proc)
        db.close()
    report.seconds = time.monotonic() - started
    return report


class _Round:
    """One harness round: the answers given meanwhile, the kills aimed, the audits."""

    def __init__(self, db: Database, db_url: str, workdir: Path, env: dict[str, str], crew: _Workers,
                 rng: random.Random, report: ParkReport, steps: Path) -> None:
        self.db, self.db_url, self.workdir, self.env, self.crew = db, db_url, workdir, env, crew
        self.rng, self.report, self.steps = rng, report, steps
        self.answer_at: dict[str, float] = {}  # escalation id -> when the person answers it (epoch)
        self.answering: dict[str, tuple[subprocess.Popen[bytes], float | None]] = {}  # id -> process, kill it at
        self.answered_at = 0.0  # monotonic: the last decision `escalate answer` wrote
        self.audit = Audit(db, db_url, report, steps)

    # -- the person ------------------------------------------------------------------------

    def step(self) -> None:
        """Answer what is due, reap answers; one poll of the harness."""
        now = time.time()
        for row in self.db.pending_escalations():
            esc_id = row["id"]
            if esc_id not in self.answer_at:
                # About half of the deadlines pass before the person answers.
                wait = self.rng.uniform(0.0, DEADLINE * 2) if row["deadline"] is not None else self.rng.uniform(0.0, 4.0)
                self.answer_at[esc_id] = row["created"] + wait
            if now >= self.answer_at[esc_id] and esc_id not in self.answering:
                proc = subprocess.Popen([sys.executable, "-m", "engine", "answer", esc_id, *answer_args(row),
                                         "--db", self.db_url], cwd=self.workdir, env=self.env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                kill_at = time.monotonic() + self.rng.uniform(0.0, 1.0) if self.rng.random() < 0.1 else None
                self.answering[esc_id] = (proc, kill_at)
        for esc_id, (proc, kill_at) in list(self.answering.items()):
            if proc.poll() is None and kill_at is not None and time.monotonic() >= kill_at:
                proc.kill()
                proc.wait()
            if proc.poll() is None:
                continue
            del self.answering[esc_id]
            if proc.returncode == 0:
                self.report.answers += 1
                self.answered_at = time.monotonic()
            elif proc.returncode != 1:  # 1: decided meanwhile (a default)
                if proc.returncode == -signal.SIGKILL:
                    self.report.answers_killed += 1
                else:
                    self.report.answers_failed += 1
                self.answer_at[esc_id] = time.time() + self.rng.uniform(0.0, 1.0)  # given again, if still pending
        time.sleep(0.02)

    def finish_answers(self) -> None:
        for proc, _ in self.answering.values():
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.answering.clear()

    # -- the kills -------------------------------------------------------------------------

    def kill_at(self, point: str, deadline: float) -> bool:
        """Wait for a moment of kind `point` and SIGKILL a worker then; False if none came
        (every run done, or the time is up)."""
        aim = self._aim(point, deadline)
        if aim is None:
            return False
        at, victims, all_of_them = aim
        while time.monotonic() < at:
            self.step()
        killed = False
        for proc in (self.crew.alive() if all_of_them else victims):
            killed = self.crew.kill(proc) or killed
        if all_of_them and killed:
            # Nothing runs until past the deadline aimed at: a new worker's poll applies it.
            gone = time.time()
            until = time.monotonic() + self.rng.uniform(DEADLINE / 4, DEADLINE / 2) + 1.0
            while time.monotonic() < until:
                self.step()
            self.audit.no_worker.append((gone, time.time()))
        return killed

    def _aim(self, point: str, deadline: float) -> tuple[float, list[subprocess.Popen[bytes]], bool] | None:
        """(monotonic time, workers to kill then, or every worker) for a kill at `point`."""
        give_up = time.monotonic() + 30.0  # no such moment comes: killed at random instead
        while time.monotonic() < deadline:
            if _over(self.db):
                return None
            alive = self.crew.ready()
            if not alive:
                self.step()
                continue
            now = time.time()
            if point == "random" or time.monotonic() > give_up:
                return time.monotonic() + self.rng.uniform(0.1, 3.0), [self.rng.choice(alive)], False
            rows = {r["run_id"]: r for r in self.db.list_runs(include_finished=True)}
            pending = self.db.pending_escalations()
            if point == "park":  # the run's holder, as its grace ends
                for esc in pending:
                    row = rows.get(esc["run_id"])
                    holder = self.crew.of(row["owner"]) if row and row["status"] == "waiting" else None
                    due = esc["created"] + PARKING_AFTER + self.rng.uniform(-0.05, 0.3)
                    if holder is not None and due > now:
                        return time.monotonic() + (due - now), [holder], False
            elif point == "requeue":  # whoever hears the answer just written
                if time.monotonic() - self.answered_at < 0.05:
                    return time.monotonic() + self.rng.uniform(0.0, 0.15), [self.rng.choice(alive)], False
            elif point == "continue":  # the worker replaying a run that was parked
                for run_id, row in rows.items():
                    holder = self.crew.of(row["owner"]) if row["status"] == "running" else None
                    if holder is not None and any(e["status"] == "decided" for e in self.db.escalations_of(run_id)):
                        return time.monotonic() + self.rng.uniform(0.0, 0.4), [holder], False
            elif point == "sweep":  # around a parked run's deadline: one worker, or all before it
                for esc in pending:
                    row = rows.get(esc["run_id"])
                    if esc["deadline"] is None or row is None or row["status"] != "parked" or esc["deadline"] < now:
                        continue
                    if esc["id"] in self.answer_at and self.answer_at[esc["id"]] < esc["deadline"]:
                        continue  # the person answers first
                    if self.rng.random() < 0.3:
                        before = esc["deadline"] - now - self.rng.uniform(0.3, 1.0)
                        if before > 0:
                            return time.monotonic() + before, [], True
                    return time.monotonic() + esc["deadline"] - now + self.rng.uniform(0.0, 1.1), [self.rng.choice(alive)], False
            self.step()
        return None


class Audit:
    """The checks of park.sr runs on one database: `check` after a kill (what holds at any
    moment), `check(final=True)` once every run should be over."""

    def __init__(self, db: Database, db_url: str, report: ParkReport, steps: Path) -> None:
        self.db, self.db_url, self.report, self.steps = db, db_url, report, steps
        self.no_worker: list[tuple[float, float]] = []  # epochs with no worker running

    def check(self, ids: list[str], *, final: bool) -> None:
        report = self.report
        if not final:
            report.checks += 1
        for run_id in ids:
            self._check_run(run_id, final)
        repeated, in_flight = steps_audit(self.steps)
        for key in repeated:
            report.problem("steps_repeated", f"step {key}", f"step {key}: executed again after its result was recorded")
        report.steps_in_flight_rerun = in_flight
        if final:
            self._check_left(ids)

    def _check_run(self, run_id: str, final: bool) -> None:
        report = self.report
        run = self.db.get_run(run_id)
        assert run is not None
        done = run["status"] == "done"
        rows = {r["id"]: r for r in self.db.escalations_of(run_id)}
        with self.db.engine.connect() as c:
            stored = list(c.execute(sa.select(events.c.seq, events.c.type, events.c.fields)
                                    .where(events.c.run_id == run_id).order_by(events.c.seq)))
        seqs = [s for s, _, _ in stored]
        types = tuple(t for _, t, _ in stored)
        whole = done or final
        if seqs != list(range(1, len(seqs) + 1)) or types != LOG[:len(types)] or (whole and types != LOG):
            report.problem("events_lost", f"log {run_id}", f"{run_id} ({run['status']}): log {list(zip(seqs, types))}")
        fields = [json.loads(f) for _, _, f in stored]
        if len({json.dumps(f, sort_keys=True) for f in fields}) != len(fields):
            report.problem("events_doubled", f"twice {run_id}", f"{run_id}: an event stored twice: {types}")
        decided: Counter[str] = Counter()
        for (_, type_, _), event in zip(stored, fields):
            if type_ != "decision":
                continue
            decided[event["id"]] += 1
            row = rows.get(event["id"])
            if row is None or row["status"] != "decided" or not self._decision_is(row, event):
                report.problem("decisions_doubled", f"wrong {event['id']}",
                               f"{run_id}: decision event {event} is not its escalation's decision {row}")
        for esc_id, n in decided.items():
            if n > 1:
                report.problem("decisions_doubled", f"twice {esc_id}", f"{esc_id}: {n} decision events")
        for row in rows.values():
            if row["resolved_by"] == "timeout_default" and row["decided_at"] < row["deadline"]:
                report.problem("defaults_early", f"early {row['id']}",
                               f"{row['id']}: default applied {row['deadline'] - row['decided_at']:.2f} s early")
        if not whole:
            return
        if len(rows) != 3 or any(r["status"] != "decided" for r in rows.values()) or set(decided) != set(rows):
            report.problem("decisions_lost", f"lost {run_id}", f"{run_id}: escalations "
                           f"{[(i, r['status']) for i, r in rows.items()]}, decision events {sorted(decided)}")
        if done and json.loads(run["result"]) != expected_result(run_id, list(rows.values())):
            report.problem("wrong_results", f"result {run_id}", f"{run_id}: result {run['result']}")
        elif run["status"] in OVER and not done:
            report.problem("wrong_results", f"result {run_id}", f"{run_id}: ended {run['status']}: {run['error']}")
        if final:
            report.done += done
            for row in rows.values():
                if row["resolved_by"] == "timeout_default":
                    report.defaults += 1
                    report.defaults_with_no_worker += any(a <= row["deadline"] <= b for a, b in self.no_worker)

    @staticmethod
    def _decision_is(row: dict[str, Any], event: dict[str, Any]) -> bool:
        """The decision event says what the escalation's row holds, and is the person's answer
        (`drop`, `ship RUN`) or the default (`keep`)."""
        decision = json.loads(row["decision"]) if isinstance(row["decision"], str) else row["decision"]
        if event.get("resolvedBy") != row["resolved_by"]:
            return False
        if event.get("selectedOption") != (decision or {}).get("selectedOption"):
            return False
        if event.get("textResponse") != (decision or {}).get("textResponse"):
            return False
        if event.get("selectedOption") is not None:
            return event["selectedOption"] == ("keep" if row["resolved_by"] == "timeout_default" else "drop")
        return event.get("textResponse") == f"ship {row['run_id']}" and row["resolved_by"] == "human"

    def _flows(self, ids: list[str]) -> list[tuple[str, str]]:
        """The runs' DBOS workflows not finished: neither SUCCESS nor, for a run that is over,
        CANCELLED (`DurableHost.finish_ended`: a workflow its process, killed at the run's end,
        left PENDING)."""
        over = {r["run_id"] for r in self.db.list_runs(include_finished=True) if r["status"] in OVER}
        with self.db.engine.connect() as c:
            table = "workflow_status" if self.db_url.startswith("sqlite") else "dbos.workflow_status"
            return [(w, s) for w, s in c.execute(sa.text(f"SELECT workflow_uuid, status FROM {table}"))
                    if w in ids and s != "SUCCESS" and not (s == "CANCELLED" and w in over)]

    def ended_but_pending(self, ids: list[str]) -> bool:
        """A run over whose workflow DBOS still holds PENDING: finished by the next process that
        opens (or a worker's scan, once a minute)."""
        return any(s == "PENDING" for _, s in self._flows(ids))

    def _check_left(self, ids: list[str]) -> None:
        """Nothing pending, parked, queued or unfinished: every run done, each workflow over."""
        report = self.report
        left = [(r["run_id"], r["status"], r["owner"]) for r in self.db.list_runs(include_finished=True)
                if r["status"] not in OVER]
        pending = [r["id"] for r in self.db.pending_escalations()]
        flows = self._flows(ids)
        for what in (*left, *pending, *flows):
            report.problem("left_pending", f"left {what}", f"left at the end: {what}")
