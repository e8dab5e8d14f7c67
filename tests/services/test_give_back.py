"""A burst's free memory given back once its runs have parked (engine/kernel/memory.py): once
per settled burst, never per park, never while a run executes; and on glibc the RSS of freed
small blocks really leaves the process. Counts and RSS, no timings."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.kernel.memory import GiveBack
from engine.services import open_services
from tests.services.test_live_parking import until
from tests.workers.procs import ASK, ASK_SCRIPT

ROOT = Path(__file__).resolve().parents[2]


class Counted:
    """A give-back that counts its calls (in the thread it runs in)."""

    def __init__(self) -> None:
        self.calls = 0
        self.done = threading.Event()

    def __call__(self) -> None:
        self.calls += 1
        self.done.set()


async def test_a_burst_of_parks_gives_back_once_and_not_while_runs_execute() -> None:
    busy = [True]
    work = Counted()
    memory = GiveBack(lambda: busy[0], settle=0.05, work=work)
    memory.parked()
    await asyncio.sleep(0.2)  # past the settle: its timer fired while a run executed
    assert work.calls == 0
    busy[0] = False
    for _ in range(50):  # a burst: each park starts the settle again (no await between two: a
        memory.parked()   # starved loop cannot let the settle pass mid-burst, as it did under load)
    assert await asyncio.to_thread(work.done.wait, 60)
    await asyncio.sleep(0.2)  # any other timer of the burst would have fired by now
    assert (work.calls, memory.given) == (1, 1)
    memory.parked()  # a later burst: once more
    await asyncio.sleep(0.2)
    for _ in range(3000):  # a hang guard, not a timing
        if memory.given == 2:
            break
        await asyncio.sleep(0.02)
    assert work.calls == 2
    memory.parked()
    memory.stop()  # the process stops: nothing more
    await asyncio.sleep(0.2)
    assert work.calls == 2


async def test_runs_held_live_give_back_once_after_all_of_them_parked(tmp_path: Path, monkeypatch) -> None:
    """10 runs started at once in a console's services: each parks past PARK_LIVE_AFTER; the
    memory is given back once, after the last, not for each (before: never)."""
    from engine.runtime.script import load_script
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 0.2, raising=False)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        assert services.parking is not None
        work = Counted()
        services.parking.memory.work = work
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        workflow = engine.load(ASK)
        handles = [engine.start_run(workflow, input="go") for _ in range(10)]
        await until(lambda: all(h.parked for h in handles) and work.calls > 0, "10 runs parked, memory given back")
        await asyncio.sleep(services.parking.memory.settle + 0.5)  # a give-back per park would have come by now
        assert work.calls == 1
        assert sum(1 for row in services.db.list_runs() if row["status"] == "parked") == 10
    finally:
        for handle in engine.runs:
            handle.cancel()
        services.close()


async def test_runs_waiting_live_do_not_hold_back_the_give_back_of_those_that_parked(tmp_path: Path, monkeypatch) -> None:
    """A console with more runs waiting than it holds live (LIVE_WAITING): those beyond park, and
    the memory is given back once they have, while the others still wait live (for up to
    PARK_LIVE_AFTER: the give-back waited for them too)."""
    from engine.runtime.script import load_script
    from rules import load_rules

    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 3600.0, raising=False)
    monkeypatch.setattr("engine.services.parking.LIVE_WAITING", 2, raising=False)
    monkeypatch.setattr("engine.services.parking.PARK_AFTER", 0.1, raising=False)
    services = await open_services(f"sqlite:///{tmp_path / 'runs.db'}", identity="console")
    try:
        assert services.parking is not None
        work = Counted()
        services.parking.memory.work = work
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
        workflow = engine.load(ASK)
        handles = [engine.start_run(workflow, input="go") for _ in range(6)]
        await until(lambda: sum(h.parked for h in handles) == 4 and work.calls > 0, "4 runs parked, memory given back")
        assert sum(not h.parked and not h.status.finished for h in handles) == 2  # still waiting live
    finally:
        for handle in engine.runs:
            handle.cancel()
        services.close()


async def test_a_worker_gives_back_once_its_runs_have_parked(tmp_path: Path, monkeypatch) -> None:
    """8 runs queued for a worker with 8 places: each parks at its approval, and the memory is
    given back after the burst: once, or twice when the queue handed the runs over in two polls
    with a settled moment between; never once per park (8), never not at all (before)."""
    import os
    import signal

    from engine.runtime.script import load_script
    from engine.services import open_database
    from engine.services.worker import Worker

    monkeypatch.setattr("engine.services.parking.PARK_AFTER", 0.2, raising=False)
    db = open_database(f"sqlite:///{tmp_path / 'runs.db'}")
    worker = Worker(db, 8, lambda line: None)
    serving = asyncio.create_task(worker.serve())
    work = Counted()
    try:
        await until(lambda: getattr(worker, "parking", None) is not None, "the worker started")
        worker.parking.memory.work = work
        engine = worker.router.engine_for({"rules": None, "workspace": str(tmp_path)})
        workflow, script = engine.load(ASK), load_script(ASK_SCRIPT)
        for _ in range(8):
            engine.queue_run(workflow, input="go", script=script)
        await until(lambda: sum(1 for row in db.list_runs() if row["status"] == "parked") == 8 and work.calls > 0,
                    "8 runs parked, memory given back")
        await asyncio.sleep(worker.parking.memory.settle + 0.5)  # a give-back per park would have come by now
        assert work.calls in (1, 2)
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # the worker's own handler: it stops as on SIGTERM
        await asyncio.wait_for(serving, 60)
        db.close()


PROBE = """
import gc, json
from engine.kernel.memory import give_back

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 // 1024

blocks = [bytes(1000) for _ in range(50_000)]  # ~50 MB of blocks past pymalloc's 512 B: glibc's heap
kept = blocks[::64]  # one in 64 stays: no free space at the heap's top, so glibc keeps the rest
del blocks
gc.collect()
freed = rss()
asked = give_back()
print(json.dumps({"freed": freed, "given": rss(), "asked": asked}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and glibc's malloc_trim: Linux")
def test_give_back_returns_freed_small_blocks_to_the_system(tmp_path: Path) -> None:
    """A process that allocated and freed ~50 MB of small blocks keeps them in RSS (free memory
    glibc keeps); give_back() hands them back: RSS falls by most of the 50 MB."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    if not figures["asked"]:
        pytest.skip("not glibc: no malloc_trim")
    assert figures["freed"] - figures["given"] > 30_000, figures  # KB: most of the 50 MB back
