"""What a run waiting for a person holds in its process (issue 26): objects counted, not timed.

Runs of one workflow are brought to their approval in one process, first a few, then more;
the objects of the kinds that need not belong to a run must not grow with the number waiting.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from engine.lang.compiler import compile_source, workflow_class
from engine.runtime.engine import CompiledWorkflow, RunStatus

SOURCE = '''prompt p: """Do the next step of the task."""
agent worker:
    instruction p
flow main:
    $x = run agent worker $input
    return $x
'''
SCRIPT = """
agents:
  worker:
    - escalate: {reason: architecture_decision, question: 'Go on?', options: [{id: go, label: Go}]}
    - done
"""


def live_agents() -> list[object]:
    from google.adk.agents import LlmAgent

    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, LlmAgent)]


def ask_human_tools(before: list[object]) -> tuple[int, int]:
    """(agents alive that were not in `before`, distinct ask_human tools among them): agents an
    earlier test of this process still holds are not this test's (`before` keeps them alive, so
    no new agent takes one's id)."""
    earlier = {id(a) for a in before}
    agents = [a for a in live_agents() if id(a) not in earlier]
    return len(agents), len({id(t) for a in agents for t in a.tools if getattr(t, "name", "") == "ask_human"})


async def bring_to_approval(engine, workflow: CompiledWorkflow, total: int) -> None:
    while len(engine.runs) < total:
        engine.start_run(workflow, input="go")
    for _ in range(2000):
        if sum(1 for h in engine.runs if h.status is RunStatus.WAITING) == total and len(engine.broker.pending()) == total:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{total} runs did not all reach their approval")


async def test_waiting_runs_share_one_ask_human_tool(harness, tmp_path: Path) -> None:
    """Every agent of every run is given `ask_human`; the tool holds nothing of a run, so one
    is built for the process (before: one per agent per run, its signature read each time)."""
    engine = harness.engine(SCRIPT)
    workflow = CompiledWorkflow(Path("wf.sr"), "wf", workflow_class(compile_source(SOURCE, Path("wf.sr"))))
    before = live_agents()
    await bring_to_approval(engine, workflow, 2)
    few = ask_human_tools(before)
    await bring_to_approval(engine, workflow, 8)
    many = ask_human_tools(before)
    assert (few[0], many[0]) == (2, 8)  # one agent per waiting run
    assert (few[1], many[1]) == (1, 1)
    for handle in engine.runs:
        handle.cancel()
    await asyncio.gather(*(handle.wait() for handle in engine.runs))


# Objects that belong to one run's execution: a parked run must leave none of them in its worker.
RUN_KINDS = ("RunHandle", "RunState", "RunContext", "EventSink", "CallFrame", "AgentFactory", "Runner", "LlmAgent",
             "Session", "InMemorySessionService", "RecordedModel")


def run_objects(before: list[object] = ()) -> dict[str, int]:
    """Objects of RUN_KINDS alive, but those in `before` (an earlier test's, still held or not
    collected yet: they are not this test's; `before` keeps them alive, so no new object takes
    one's id)."""
    gc.collect()
    earlier = {id(o) for o in before}
    found = dict.fromkeys(RUN_KINDS, 0)
    for o in gc.get_objects():
        name = type(o).__name__
        if name in found and id(o) not in earlier:
            found[name] += 1
    return found


async def settled_run_objects(before: list[object]) -> dict[str, int]:
    """`run_objects` once two looks in a row agree and no run is held: a run's row says parked
    just before the last references to its execution go (its cancelled task, DBOS's wrapper
    ending on the loop). A leak stays: after 10 s the counts are taken as they are."""
    last: dict[str, int] | None = None
    for _ in range(200):
        found = run_objects(before)
        if found == last and found["RunHandle"] == 0:
            break
        last = found
        await asyncio.sleep(0.05)
    return found


async def warmed_up() -> None:
    """ADK's warm-up, once per process, before counting: it ends with gc.freeze(), and objects of
    runs alive at that moment are never collected when they die in a cycle (the collector does
    not look at frozen ones): a test whose runs started the warm-up counted the first batch's
    objects as left behind (order-dependent: only when it was the first in its process)."""
    from engine.runtime.engine import warm_up

    await asyncio.to_thread(warm_up)


def objects_of_runs() -> list[object]:
    gc.collect()
    return [o for o in gc.get_objects() if type(o).__name__ in RUN_KINDS]


async def test_parked_runs_leave_only_rows_in_their_worker(tmp_path: Path) -> None:
    """A worker parks the runs that wait for a person (their execution ended: only rows); N of
    them parked leave no object of a run's execution behind (a guard: none found on main either,
    engine/services/worker.py `forget`), and its memory for them does not grow with N."""
    import os
    import signal

    from engine.durable.database import PARKED
    from engine.runtime.script import load_script
    from engine.services import open_database
    from engine.services.worker import Worker

    (tmp_path / "wf.sr").write_text(SOURCE)
    (tmp_path / "wf.yaml").write_text(SCRIPT)
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    worker = Worker(db, 8, lambda line: None)
    await warmed_up()
    before = objects_of_runs()
    serving = asyncio.create_task(worker.serve())
    counts = []
    try:
        for _ in range(500):
            if worker.router is not None:
                break
            await asyncio.sleep(0.02)
        assert worker.router is not None
        engine = worker.router.engine_for({"rules": None, "workspace": str(tmp_path)})
        workflow = engine.load(tmp_path / "wf.sr")
        script = load_script(tmp_path / "wf.yaml")
        for total in (2, 10):
            while len(db.list_runs()) < total:
                engine.queue_run(workflow, input="go", script=script)
            for _ in range(3000):
                if sum(1 for row in db.list_runs() if row["status"] == PARKED) == total:
                    break
                await asyncio.sleep(0.02)
            assert sum(1 for row in db.list_runs() if row["status"] == PARKED) == total
            counts.append(await settled_run_objects(before))
        assert worker.router.runs == []
        assert counts[0] == counts[1], f"2 parked: {counts[0]}; 10 parked: {counts[1]}"
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # the worker's own handler: it stops as on SIGTERM
        await asyncio.wait_for(serving, 60)
        db.close()


async def test_runs_held_live_leave_only_rows_once_parked(tmp_path: Path, monkeypatch) -> None:
    """A process that holds its runs live (a console's services, `run --wait`): past the bound its
    waiting runs park too. N of them parked keep none of their execution objects (only their
    `RunHandle`, which the console lists and `run --wait` waits on, and their listed escalation);
    before, each stayed a live coroutine with its runner, agent and session."""
    from engine.durable.database import PARKED
    from engine.runtime.script import load_script
    from engine.services import open_services
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 0.1, raising=False)
    (tmp_path / "wf.sr").write_text(SOURCE)
    await warmed_up()
    before = objects_of_runs()
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    counts = []
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script_text(tmp_path))
        workflow = engine.load(tmp_path / "wf.sr")
        for total in (2, 10):
            while len(engine.runs) < total:
                engine.start_run(workflow, input="go")
            for _ in range(3000):  # a hang guard, not a timing
                if sum(1 for row in services.db.list_runs() if row["status"] == PARKED) == total:
                    break
                await asyncio.sleep(0.02)
            assert sum(1 for row in services.db.list_runs() if row["status"] == PARKED) == total
            counts.append(await settled_held_objects(before, total))
        assert len(services.broker.pending()) == 10  # still listed: answerable here
        execution = [dict(c, RunHandle=0) for c in counts]
        assert execution == [dict.fromkeys(RUN_KINDS, 0)] * 2, f"2 parked: {counts[0]}; 10 parked: {counts[1]}"
        assert [c["RunHandle"] for c in counts] == [2, 10]
    finally:
        for handle in engine.runs:
            handle.cancel()
        services.close()


def load_script_text(folder: Path):
    from engine.runtime.script import load_script

    (folder / "wf.yaml").write_text(SCRIPT)
    return load_script(folder / "wf.yaml")


async def settled_held_objects(before: list[object], handles: int) -> dict[str, int]:
    """`run_objects` once two looks in a row agree and only the handles are left (the cancelled
    tasks and DBOS's wrappers let go just after the rows say parked); a leak stays: after 10 s
    the counts are taken as they are."""
    last: dict[str, int] | None = None
    for _ in range(200):
        found = run_objects(before)
        if found == last and found == dict(dict.fromkeys(RUN_KINDS, 0), RunHandle=handles):
            break
        last = found
        await asyncio.sleep(0.05)
    return found


async def test_a_parked_run_keeps_no_event_for_waiters_nobody_has(tmp_path: Path, monkeypatch) -> None:
    """The handle a parked run keeps makes its waiters' event at the first `wait` only (an
    asyncio.Event and its deque: ~850 of a handle's ~1,200 bytes, for every parked run); a
    wait begun before or after the run's end still returns its status."""
    from engine.durable.database import PARKED
    from engine.services import open_services
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 0.1, raising=False)
    (tmp_path / "wf.sr").write_text(SOURCE)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script_text(tmp_path))
        workflow = engine.load(tmp_path / "wf.sr")
        handles = [engine.start_run(workflow, input="go") for _ in range(3)]
        for _ in range(3000):  # a hang guard, not a timing
            if sum(1 for row in services.db.list_runs() if row["status"] == PARKED) == 3:
                break
            await asyncio.sleep(0.02)
        held = [o for h in handles for o in vars(h).values() if isinstance(o, asyncio.Event)]
        assert all(h.parked for h in handles) and held == []
        waiter = asyncio.ensure_future(handles[0].wait())
        await asyncio.sleep(0)
        handles[0].cancel()
        assert await asyncio.wait_for(waiter, 60) is RunStatus.CANCELLED
        handles[1].cancel()
        assert await asyncio.wait_for(handles[1].wait(), 60) is RunStatus.CANCELLED  # waited after its end
    finally:
        for handle in engine.runs:
            handle.cancel()
        services.close()
