"""The console on a full database (prints numbers; asserts nothing about time).

1. First frame of `escalate` (the demo) whose database holds 10,000 past escalations, each
   launch paired with Textual's floor (first_frame.py).
2. The console opened on 1,000 interrupted runs, each waiting on a decision: first frame, and
   the time until the inbox lists all 1,000 pending decisions.
3. With `--waiting DB_FILE` (a SQLite file where runs wait on people, e.g. the one
   `bench_waiting.py --runs 10000 --keep DIR` leaves, 10,000 parked runs): the console opened on
   a copy of it, first frame and every pending decision listed, as in 2; then nothing else.

Run: python tests/benchmarks/bench_durable_console.py [--quick] [--waiting DB_FILE]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from first_frame import _command, _on_terminal, with_floor  # noqa: E402  tests/benchmarks/, the script's own folder

QUICK = "--quick" in sys.argv


def past_escalations(db_url: str, count: int) -> None:
    """`count` decided escalations of earlier runs, as the console leaves them."""
    from engine.durable.database import Database

    db = Database(db_url)
    now = time.time() - 86_400
    runs, escalations = [], []
    for n in range(count):
        run_id = f"rpast{n // 5:05d}"
        if n % 5 == 0:
            runs.append(dict(run_id=run_id, task="auth-refactor", workflow="auth-refactor", path=json.dumps("/x.sr"),
                             flow=None, input="go", status="done", result=json.dumps("ok"), error=None,
                             started=now + n, finished=now + n + 1, workspace=json.dumps("/")))
        payload = {"escalation": {"id": f"{run_id}.{n}", "task_id": "auth-refactor", "run_id": run_id, "agent": "planner",
                                  "reason": "architecture_decision", "question": f"Question {n}?", "context": "",
                                  "options": [{"id": "a", "label": "A", "description": "", "recommended": True}],
                                  "allow_agent_decision": False, "timeout": None, "origin": "agent_text",
                                  "created_at": now + n},
                   "policy": {"deadline": None, "on_timeout": "wait", "option_id": None, "timeout_seconds": None},
                   "extra": {}}
        decision = {"responseType": "option", "selectedOption": "a", "textResponse": None, "additionalInstructions": None,
                    "resolvedBy": "human", "resolvedAt": now + n + 0.5, "note": "", "stopsTask": False}
        escalations.append(dict(id=f"{run_id}.{n}", run_id=run_id, created=now + n, deadline=None,
                                payload=json.dumps(payload), status="decided", decision=json.dumps(decision),
                                resolved_by="human", decided_at=now + n + 0.5))
    db.import_history(runs, escalations)
    db.close()


async def interrupted_runs(db_url: str, count: int, folder: Path) -> None:
    """`count` runs of the demo's auth-refactor, each left waiting on its architecture decision
    by a process that stops (as `escalate run` exiting 4, or a console quitting, leaves them)."""
    from engine.demo import demo_workflows
    from engine.durable.database import Database
    from engine.durable.decisions import DecisionStore
    from engine.durable.host import DurableHost
    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import RealClock
    from engine.runtime.adk_setup import prepare_adk
    from engine.runtime.engine import Engine
    from engine.runtime.script import load_script
    from rules import default_rules

    prepare_adk()
    db = Database(db_url)
    host = await DurableHost.open(db)
    clock = RealClock()
    engine = Engine(rules=default_rules(), broker=EscalationBroker(clock, store=DecisionStore(db)), clock=clock,
                    workspace=folder, db=db, host=host)
    path = next(p for p in demo_workflows() if p.stem == "auth-refactor")
    workflow, script = engine.load(path), load_script(path.with_suffix(".yaml"))
    for _ in range(count):
        engine.start_run(workflow, input="Fix login", script=script)
    while len(db.pending_escalations()) < count:
        await asyncio.sleep(0.2)
    stopping = engine.detach()
    await asyncio.wait(stopping, timeout=10)
    host.close()


def open_on(url: str, count: int, launches: int) -> None:
    """The console on `url` where `count` decisions are pending: first frame, all listed; with
    the console's CPU seconds from its start to its exit after `q` (a busy shared host
    stretches wall time, not CPU)."""
    import first_frame

    first_frame.TIMEOUT = 600.0  # a loaded host: measured, however slow
    os.environ["ESCALATE_DB"] = url
    first = [_on_terminal(_command([]), quit_keys=b"qy") for _ in range(launches)]
    cpu: list[float] = []
    real_waitpid = os.waitpid

    def waitpid(pid: int, options: int) -> tuple[int, int]:  # killed, not reaped yet: its CPU is still there
        cpu.append(_cpu_seconds(pid))
        return real_waitpid(pid, options)

    os.waitpid = waitpid  # type: ignore[assignment]
    try:
        listed = [_on_terminal(_command([]), marker=f"Inbox ({count})".encode(), quit_keys=b"qy") for _ in range(launches)]
    finally:
        os.waitpid = real_waitpid  # type: ignore[assignment]
    print(f"console on {count} waiting decisions: first frame median {statistics.median(first) * 1000:.0f} ms "
          f"(max {max(first) * 1000:.0f} ms); all {count} pending decisions listed after median "
          f"{statistics.median(listed):.2f} s (max {max(listed):.2f} s), CPU to its exit median "
          f"{statistics.median(cpu):.2f} s   (load {' '.join(f'{x:.1f}' for x in os.getloadavg())})")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a process not yet reaped (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def waiting_copy(source: Path, folder: Path) -> tuple[str, int]:
    """A copy of a database where runs wait (its WAL too), and how many decisions are pending."""
    import shutil

    from engine.durable.database import Database

    for suffix in ("", "-wal"):
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", folder / f"waiting.db{suffix}")
    url = f"sqlite:///{folder / 'waiting.db'}"
    db = Database(url)
    try:
        return url, len(db.pending_escalations())
    finally:
        db.close()


def main() -> None:
    launches = 3 if QUICK else 10
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "--waiting" in sys.argv:
            url, count = waiting_copy(Path(sys.argv[sys.argv.index("--waiting") + 1]), folder)
            open_on(url, count, launches)
            return
        past = f"sqlite:///{folder / 'past.db'}"
        past_escalations(past, 10_000)
        os.environ["ESCALATE_DB"] = past
        console, floor = with_floor([], launches)
        ms = sorted(t * 1000 for t in console)
        print(f"first frame with 10,000 past escalations in the database: median {statistics.median(ms):.0f} ms, "
              f"max {ms[-1]:.0f} ms, {sum(t < 0.5 for t in console)} of {launches} under 500 ms "
              f"(Textual's floor: median {statistics.median(floor) * 1000:.0f} ms)")

        waiting = f"sqlite:///{folder / 'waiting.db'}"
        count = 200 if QUICK else 1000
        started = time.perf_counter()
        asyncio.run(interrupted_runs(waiting, count, folder))
        print(f"{count} interrupted runs made in {time.perf_counter() - started:.1f} s")
        open_on(waiting, count, launches)


if __name__ == "__main__":
    main()
