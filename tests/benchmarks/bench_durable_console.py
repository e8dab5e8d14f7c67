"""The console on a full database (prints numbers; asserts nothing about time).

1. First frame of `escalate` (the demo) whose database holds 10,000 past escalations, each
   launch paired with Textual's floor (first_frame.py).
2. The console opened on 1,000 interrupted runs, each waiting on a decision: first frame, and
   the time until the inbox lists all 1,000 pending decisions.
3. With `--waiting DB_FILE` (a SQLite file where runs wait on people, e.g. the one
   `bench_waiting.py --runs 10000 --keep DIR` leaves, 10,000 parked runs): the console opened on
   a copy of it, first frame and every pending decision listed, as in 2; then nothing else.

Run: python tests/benchmarks/bench_durable_console.py [--quick] [--waiting DB_FILE] [--tree NAME=PATH ...]
`--tree old=/tmp/old --tree new=.`: the consoles of 2 and 3 run that code (PYTHONPATH), their
launches alternating, each on a fresh copy of the database.
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


def open_on(source: Path, folder: Path, launches: int, trees: dict[str, str | None]) -> None:
    """The console on a copy of `source`, where decisions are pending: first frame, all listed;
    with the console's CPU seconds when all are listed and at its exit after `q` (a busy shared
    host stretches wall time, not CPU). Each launch gets a fresh copy; with several `trees`
    (name -> the code's folder, put first on PYTHONPATH), their launches alternate."""
    results: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in trees}
    for _ in range(launches):
        for name, tree in trees.items():
            results[name].append(_launch(source, folder, tree))
    count = waiting_copy(source, folder)[1]
    for name, rows in results.items():
        first, listed, cpu_listed, cpu_exit = (sorted(column) for column in zip(*rows))
        print(f"{name + ': ' if name else ''}console on {count} waiting decisions: first frame median "
              f"{statistics.median(first) * 1000:.0f} ms (max {first[-1] * 1000:.0f} ms); all {count} pending decisions "
              f"listed after median {statistics.median(listed):.2f} s (max {listed[-1]:.2f} s); its CPU when all are "
              f"listed median {statistics.median(cpu_listed):.2f} s, to its exit median {statistics.median(cpu_exit):.2f} s"
              f"   (load {' '.join(f'{x:.1f}' for x in os.getloadavg())})")


def _launch(source: Path, folder: Path, tree: str | None) -> tuple[float, float, float, float]:
    """(first frame, all listed, CPU when listed, CPU at exit) of one console on a fresh copy."""
    import first_frame

    first_frame.TIMEOUT = 600.0  # a loaded host: measured, however slow
    if tree is not None:
        os.environ["PYTHONPATH"] = tree
    url, count = waiting_copy(source, folder)
    os.environ["ESCALATE_DB"] = url
    first = _on_terminal(_command([]), quit_keys=b"qy")
    url, count = waiting_copy(source, folder)  # as it was: the first launch may have changed it
    os.environ["ESCALATE_DB"] = url
    cpu: list[float] = []
    listed = _on_terminal(_command([]), marker=f"Inbox ({count})".encode(), quit_keys=b"qy",
                          seen_by=lambda pid: cpu.append(_cpu_seconds(pid)))
    return first, listed, cpu[0], cpu[-1]


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

    for suffix in ("", "-wal", "-shm"):
        copy = folder / f"console.db{suffix}"
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", copy)
        elif copy.exists():
            copy.unlink()
    url = f"sqlite:///{folder / 'console.db'}"
    db = Database(url)
    try:
        return url, len(db.pending_escalations())
    finally:
        db.close()


def _trees() -> dict[str, str | None]:
    """`--tree NAME=PATH`, repeated: the code each launch runs (none: this environment's)."""
    trees: dict[str, str | None] = {}
    for i, arg in enumerate(sys.argv):
        if arg == "--tree":
            name, _, path = sys.argv[i + 1].partition("=")
            trees[name] = str(Path(path).resolve())
    return trees or {"": None}


def main() -> None:
    launches = 3 if QUICK else 10
    trees = _trees()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "--waiting" in sys.argv:
            open_on(Path(sys.argv[sys.argv.index("--waiting") + 1]), folder, launches, trees)
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
        open_on(folder / "waiting.db", folder, launches, trees)


if __name__ == "__main__":
    main()
