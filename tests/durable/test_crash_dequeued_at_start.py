"""A worker's DBOS listens to the workers' queue from its launch, before the worker has made the
engines that execute runs: a run handed over in that moment used to fail for good ("no
escalate engine in this process", the workflow in ERROR, the run never continued; found by
tests/durable/park_harness.py on PostgreSQL, workers started with runs queued). It waits for
them now. The window made exactly: the services open as a worker's, a run queued beforehand,
and no engine until DBOS has handed the run over."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import sqlalchemy as sa

import pytest

from engine.durable.database import Database
from engine.durable.host import WORKERS_QUEUE
from engine.services import open_services
from engine.services.worker import EngineRouter
from tests.durable.crash_harness import queue_runs
from tests.durable.park_harness import PARK, PARK_RULES, PARK_SCRIPT


def _workflow_status(db: Database, run_id: str) -> str | None:
    with db.engine.connect() as c:
        return c.execute(sa.text("SELECT status FROM workflow_status WHERE workflow_uuid = :i"), {"i": run_id}).scalar()


@pytest.mark.parametrize("during_open", [False, True])
async def test_a_run_dequeued_before_the_worker_has_its_engines_waits_for_them(tmp_path: Path, monkeypatch,
                                                                               during_open: bool) -> None:
    """`during_open`: the run is handed over while the host is still opening (the workers' queue
    registered, `open` not returned yet: that window widened to seconds here)."""
    from dbos import DBOS

    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    # The run keeps waiting in its place (its grace an hour): the test looks at it however late.
    monkeypatch.setattr("engine.services.parking.PARK_AFTER", 3600.0)
    (run_id,) = await asyncio.to_thread(queue_runs, url, tmp_path, PARK, PARK_SCRIPT, PARK_RULES, 1)
    db = Database(url)
    if during_open:
        register = DBOS.register_queue_async

        async def slowly(name, *args, **kwargs):  # once the workers' queue is known, DBOS dequeues meanwhile
            done = await register(name, *args, **kwargs)
            end = time.monotonic() + 120
            while name == WORKERS_QUEUE and await asyncio.to_thread(_workflow_status, db, run_id) == "ENQUEUED":
                assert time.monotonic() < end, "DBOS did not dequeue the run while the host opened"
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)
            return done

        monkeypatch.setattr(DBOS, "register_queue_async", slowly)
    services = await open_services(url, identity="worker", worker_concurrency=1)
    try:
        end = time.monotonic() + 120
        while await asyncio.to_thread(_workflow_status, db, run_id) == "ENQUEUED":  # not handed over yet
            assert time.monotonic() < end, "DBOS never dequeued the run"
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the old code failed the workflow at once
        assert await asyncio.to_thread(_workflow_status, db, run_id) == "PENDING"
        said: list[str] = []
        EngineRouter(services, said.append)  # the worker's engines, made now
        while not await asyncio.to_thread(db.pending_escalations, [run_id]):  # it runs to its first question
            assert time.monotonic() < end, (said, await asyncio.to_thread(db.get_run, run_id))
            await asyncio.sleep(0.05)
        assert (await asyncio.to_thread(db.get_run, run_id))["status"] == "waiting"
    finally:
        services.close()
        db.close()
