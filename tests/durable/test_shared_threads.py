"""One thread pool shared by every durable run of a process, bounded (issue 26): DBOS's executor
(the database writes of steps and workflows, and every `asyncio.to_thread` of the loop) grew
without bound, one thread more for each run writing at the same moment: 200 runs started at once
left ~130 threads behind, ~40 KB of memory per waiting run. Counted, not timed: real durable runs
on a SQLite file, all started at once and brought to their approval in one process."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from engine.durable.host import EXECUTOR_THREADS
from engine.services import open_services

RUNS = 3 * EXECUTOR_THREADS
FLOW = '''prompt p: """Do the next step."""
agent worker:
    instruction p
flow main:
    $x = run agent worker $input
    return $x
'''
SCRIPT = "agents:\n  worker:\n    - escalate: {reason: architecture_decision, question: 'Go on?', options: [{id: go, label: Go}]}\n"


def _pool_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("dbos-executor"))


async def test_runs_started_at_once_share_a_bounded_pool_of_threads(tmp_path: Path) -> None:
    from engine.runtime.engine import RunStatus
    from engine.runtime.script import parse_script
    from rules.loader import default_rules

    (tmp_path / "ask.sr").write_text(FLOW)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="test")
    try:
        engine = services.engine(default_rules(), workspace=tmp_path, script=parse_script(SCRIPT, "ask.yaml"))
        workflow = engine.load(tmp_path / "ask.sr")
        handles = [engine.start_run(workflow, input=f"run {i}") for i in range(RUNS)]
        most = 0
        for _ in range(6000):  # until every run waits at its approval (each a pending escalation)
            most = max(most, _pool_threads())
            if len(services.db.pending_ids()) == RUNS and all(h.status is RunStatus.WAITING for h in handles):
                break
            await asyncio.sleep(0.02)
        assert len(services.db.pending_ids()) == RUNS, [h.error for h in handles if h.error]
        assert {h.status for h in handles} == {RunStatus.WAITING}
        most = max(most, _pool_threads())  # a pool never shrinks: what it grew to is still there
        assert 0 < most <= EXECUTOR_THREADS, f"{most} threads in DBOS's pool for {RUNS} runs"
    finally:
        services.close()
