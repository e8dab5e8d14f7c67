"""A run held live by opened services (what a console, `run --wait` and `resume` hold) parks past
PARK_LIVE_AFTER and is continued by the same process, on the same handle, when that process
decides it (the console's pane and a rule answer through its broker). Real SQLite files, DBOS,
the real workflow of the worker tests."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.kernel.model import ResolvedBy
from engine.runtime.engine import RunStatus
from engine.services import open_services
from tests.workers.procs import ASK, ASK_SCRIPT, answer_for, expected_result


@pytest.fixture(autouse=True)
def park_soon(monkeypatch) -> None:
    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 0.2, raising=False)


async def until(condition, what: str) -> None:
    for _ in range(6000):  # a hang guard (120 s), not a timing
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def parked(services, run_id: str) -> bool:
    row = services.db.get_run(run_id)
    return row["status"] == "parked" and row["owner"] == services.host.owner


async def test_a_parked_run_answered_in_its_own_process_goes_on_with_the_same_handle(tmp_path: Path) -> None:
    from engine.runtime.script import load_script
    from rules import load_rules

    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        seen: list[tuple[str, str | None]] = []
        engine.subscribe(lambda event: seen.append((event.type, event.fields.get("id"))))
        handle = engine.start_run(engine.load(ASK), input="go")
        for _ in range(2):
            await until(lambda: bool(services.broker.pending()) and parked(services, handle.id), "the run parked")
            assert handle.status is RunStatus.WAITING and handle.parked and handle._task is None  # rows only
            (pending,) = services.broker.pending()  # still listed here: the pane shows it, answers it
            services.broker.answer(pending.escalation.id, answer_for({"payload": services.db.get_escalation(
                pending.escalation.id)["payload"]}), ResolvedBy.HUMAN)
        assert await asyncio.wait_for(handle.wait(), 120) is RunStatus.DONE
        assert handle.result == expected_result(handle.id)
        assert engine.runs == [handle]  # the same handle went on: one run listed
        stored = [(e["type"], e.get("id")) for e in services.db.events_of(handle.id)]
        assert [(e.type, e.fields.get("id")) for e in handle.events] == stored  # its log, once
        assert seen == stored  # subscribers (the console's log) heard each event once
        assert [t for t, _ in stored].count("human_escalation") == 2
    finally:
        services.close()


async def test_a_parked_run_cancelled_here_ends_cancelled_and_withdraws_its_question(tmp_path: Path) -> None:
    from engine.runtime.script import load_script
    from rules import load_rules

    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        handle = engine.start_run(engine.load(ASK), input="go")
        await until(lambda: parked(services, handle.id), "the run parked")
        handle.cancel()
        assert await asyncio.wait_for(handle.wait(), 120) is RunStatus.CANCELLED
        assert services.broker.pending() == []
        assert services.db.get_run(handle.id)["status"] == "cancelled"
        assert [row["status"] for row in services.db.escalations_of(handle.id)] == ["withdrawn"]
    finally:
        services.close()


async def test_a_process_holds_at_most_live_waiting_runs_live_the_rest_park(tmp_path: Path, monkeypatch) -> None:
    """Runs wait live (the in-process answer) up to LIVE_WAITING; one that comes to wait beyond
    them parks after PARK_AFTER. One answered in its grace stops counting: the next to wait is
    held live again."""
    from engine.runtime.script import load_script
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 3600.0, raising=False)
    monkeypatch.setattr("engine.services.parking.LIVE_WAITING", 2, raising=False)
    monkeypatch.setattr("engine.services.parking.PARK_AFTER", 0.1, raising=False)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        workflow = engine.load(ASK)
        handles = []
        for _ in range(4):  # one at a time: which ones stay live is then known
            handles.append(engine.start_run(workflow, input="go"))
            await until(lambda: len(services.broker.pending()) == len(handles), "the run waiting")
        await until(lambda: sum(parked(services, h.id) for h in handles) == 2, "two runs parked")
        assert [h.parked for h in handles] == [False, False, True, True]  # the first two still live
        live = next(p for p in services.broker.pending() if p.escalation.run_id == handles[0].id)
        services.broker.answer(live.escalation.id, answer_for({"payload": services.db.get_escalation(
            live.escalation.id)["payload"]}), ResolvedBy.HUMAN)
        await until(lambda: any(p.escalation.run_id == handles[0].id for p in services.broker.pending()),
                    "the answered run at its second question")
        assert not handles[0].parked  # answered live, it waits live again: one of the two places
        late = engine.start_run(workflow, input="go")
        await until(lambda: any(p.escalation.run_id == late.id for p in services.broker.pending()), "a fifth run waiting")
        await until(lambda: parked(services, late.id), "the fifth run parked: both live places taken")
        assert not handles[0].parked and not handles[1].parked
    finally:
        services.close()


async def test_a_parked_run_is_taken_back_here_with_no_queue_polled_for_it(tmp_path: Path, monkeypatch) -> None:
    """The decision puts the run on this process's own queue and this process takes it from
    there itself (engine/durable/take.py): DBOS's queue manager never starts a poller for that
    queue (before: the queue was registered on the decision, and the run waited up to a second
    for DBOS to find it, then for its poll, ten times a second until retired). As `run --wait`
    opens: no own queue at open."""
    import threading

    import sqlalchemy as sa

    from engine.runtime.script import load_script
    from rules import load_rules

    started: list[str] = []
    start = threading.Thread.start

    def counted(thread: threading.Thread) -> None:
        started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", counted)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="run", resumes=False)
    try:
        poller = f"queue-worker-{services.host.queue_name}"
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        handle = engine.start_run(engine.load(ASK), input="go")
        for _ in range(2):
            await until(lambda: bool(services.broker.pending()) and parked(services, handle.id), "the run parked")
            (pending,) = services.broker.pending()
            services.broker.answer(pending.escalation.id, answer_for({"payload": services.db.get_escalation(
                pending.escalation.id)["payload"]}), ResolvedBy.HUMAN)
            await until(lambda: not handle.parked, "the run taken back")
            with services.db.engine.connect() as c:  # nothing for DBOS to find: no row for the own queue
                assert services.host.queue_name not in set(c.execute(sa.text("SELECT name FROM queues")).scalars())
        assert await asyncio.wait_for(handle.wait(), 120) is RunStatus.DONE
        assert handle.result == expected_result(handle.id)
        assert poller not in started, started  # its queue never polled by DBOS
    finally:
        services.close()
