"""The console on a full database (prints numbers; asserts nothing about time).

1. First frame of `escalate` (the demo) whose database holds 10,000 past escalations, each
   launch paired with Textual's floor (first_frame.py).
2. The console opened on 1,000 interrupted runs, each waiting on a decision: first frame, and
   the time until the inbox lists all 1,000 pending decisions.

Run: python tests/benchmarks/bench_durable_console.py [--quick]
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


def main() -> None:
    launches = 3 if QUICK else 10
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
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
        os.environ["ESCALATE_DB"] = waiting
        first = [_on_terminal(_command([]), quit_keys=b"qy") for _ in range(launches)]
        listed = [_on_terminal(_command([]), marker=f"Inbox ({count})".encode(), quit_keys=b"qy") for _ in range(launches)]
        print(f"console on {count} interrupted runs: first frame median {statistics.median(first) * 1000:.0f} ms "
              f"(max {max(first) * 1000:.0f} ms); all {count} pending decisions listed after median "
              f"{statistics.median(listed):.2f} s (max {max(listed):.2f} s)")


if __name__ == "__main__":
    main()
