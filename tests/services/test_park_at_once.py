"""What a run that parks in its own process leaves, and what its park costs (issue 26): runs
beyond the ones a process holds live park at once, so that runs started one after another do
not overlap live; a park writes its row and looks whether the run still waits in one
transaction. Real SQLite files, DBOS, the workflow of the worker tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from engine.durable import parking
from engine.durable.database import Database
from engine.kernel.model import ResolvedBy
from engine.runtime.engine import RunStatus
from engine.services import open_services
from tests.runtime.test_waiting_run_memory import objects_of_runs, run_objects, warmed_up
from tests.services.test_live_parking import parked, until
from tests.workers.procs import ASK, ASK_SCRIPT, answer_for


async def test_runs_beyond_the_live_bound_park_at_once_and_keep_no_execution(tmp_path: Path, monkeypatch) -> None:
    """Runs started one after another, each once the one before waits: the first LIVE_WAITING
    wait live, every later one parks at once (it waited PARK_AFTER, 2 s: set to an hour here,
    the test would hang), and of a parked run no execution object stays (its `RunState`, its
    ADK `Runner`): the two live runs' only."""
    from engine.runtime.script import load_script
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 3600.0, raising=False)
    monkeypatch.setattr("engine.services.parking.LIVE_WAITING", 2, raising=False)
    monkeypatch.setattr("engine.services.parking.PARK_AFTER", 3600.0, raising=False)
    await warmed_up()  # its gc.freeze() before any run of this test
    before = objects_of_runs()
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        workflow = engine.load(ASK)
        handles = []
        two: dict[str, int] = {}
        for number in range(6):
            handles.append(engine.start_run(workflow, input="go"))
            await until(lambda: len(services.broker.pending()) == len(handles), "the run waiting")
            if number == 1:  # the two live runs: what their executions hold
                two = run_objects(before)
        await until(lambda: all(parked(services, h.id) for h in handles[2:]), "the runs beyond the two live ones parked")
        assert [h.parked for h in handles] == [False, False, True, True, True, True]
        assert all(h.status is RunStatus.WAITING for h in handles)
        # Of the four parked runs only their handles stay (a console lists them): the execution
        # objects counted are the two live runs' (a run's row says parked just before the last
        # references to its execution go: looked at until they agree).
        await until(lambda: run_objects(before) == dict(two, RunHandle=6), "the parked runs' execution objects gone")
        assert two["RunState"] == 2 and two["Runner"] == 2
        assert len(services.broker.pending()) == 6  # all still listed and answerable here
    finally:
        for handle in engine.runs:
            handle.cancel()
        services.close()


async def test_a_decision_heard_while_the_row_is_parked_wakes_the_run(tmp_path: Path, monkeypatch) -> None:
    """The park's look at the rows comes before a decision made while its row is being written:
    the decision heard meanwhile makes the process look again, and the run goes on."""
    from engine.runtime.script import load_script
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 0.0, raising=False)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    loop = asyncio.get_running_loop()
    real = parking.park

    def answer() -> None:
        (pending,) = services.broker.pending()
        services.broker.answer(pending.escalation.id, answer_for({"payload": services.db.get_escalation(
            pending.escalation.id)["payload"]}), ResolvedBy.HUMAN)

    async def answered() -> None:
        answer()

    def park_then_answer(*args: Any, **kwargs: Any) -> tuple[bool, bool]:  # on the park's thread
        done = real(*args, **kwargs)
        asyncio.run_coroutine_threadsafe(answered(), loop).result(60)  # decided after the look
        return done

    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        monkeypatch.setattr(parking, "park", park_then_answer)
        handle = engine.start_run(engine.load(ASK), input="go")
        await until(lambda: any(e.type == "decision" for e in handle.events), "the decision")
        monkeypatch.setattr(parking, "park", real)
        await until(lambda: [e.type for e in handle.events].count("human_escalation") == 2,
                    "the run going on to its second question")
    finally:
        for handle in engine.runs:
            handle.cancel()
        services.close()


def test_a_park_writes_its_row_and_looks_whether_the_run_waits_in_one_transaction(tmp_path: Path) -> None:
    """(parked, still waits) from one transaction: the look was a second one, on a thread hop of
    its own, after every park."""
    db = Database(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        for run_id in ("waits", "decided"):
            db.create_run(run_id=run_id, task="t", workflow="w", path="w.sr", flow=None, input="", script=None,
                          rules=None, workspace=str(tmp_path), started=1.0, status="waiting", owner="me", heartbeat=1.0)
        with db.engine.begin() as c:
            for run_id, status in (("waits", "pending"), ("decided", "decided")):
                c.execute(sa.text("INSERT INTO escalate_escalations (id, run_id, status, payload, created) "
                                  "VALUES (:id, :run, :status, '{}', 1.0)"), {"id": f"{run_id}.1", "run": run_id, "status": status})
        begun: list[int] = []
        sa.event.listen(db.engine, "begin", lambda conn: begun.append(1))
        assert parking.park(db, "waits", "me", hold=True) == (True, True)
        assert parking.park(db, "decided", "me", hold=True) == (True, False)  # to be woken now
        assert parking.park(db, "decided", "someone else") == (False, False)  # not its row: nothing changed
        assert len(begun) == 3
    finally:
        db.close()



async def test_runs_of_a_burst_park_once_the_burst_has_come_to_wait(tmp_path: Path, monkeypatch) -> None:
    """Runs started all at once: those that come to wait while others still execute park once
    none does (their parks amid the burst delayed its last approval), not after PARK_AFTER (an
    hour here: the test would hang)."""
    from engine.runtime.script import load_script
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 3600.0, raising=False)
    monkeypatch.setattr("engine.services.parking.LIVE_WAITING", 0, raising=False)
    monkeypatch.setattr("engine.services.parking.PARK_AFTER", 3600.0, raising=False)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        workflow = engine.load(ASK)
        handles = [engine.start_run(workflow, input="go") for _ in range(6)]
        await until(lambda: all(parked(services, h.id) for h in handles), "the burst parked")
        assert all(h.parked and h.status is RunStatus.WAITING for h in handles)
        assert len(services.broker.pending()) == 6
    finally:
        for handle in engine.runs:
            handle.cancel()
        services.close()
