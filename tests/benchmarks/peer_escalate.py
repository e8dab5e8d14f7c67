"""The escalate side of bench_peer.py: the workload (a real `.sr` workflow and its script) and
what is measured inside one process, run as a child with PYTHONPATH=<the escalate tree measured>,
so that bench_peer.py can measure an older checkout too. Prints one JSON line:

    python peer_escalate.py turns SRC N            # per turn: {"memory", "durable", "memory_cpu", "durable_cpu"} (s)
    python peer_escalate.py many SRC N FOLDER STATE  # N runs to their approval here, measured at STATE:
        # `approval` (started all at once, held live, before the parking bound), `parked` (all at
        # once, settled: each parked in this process) or `sequential` (one after another: each
        # started once the one before waits at its approval; settled, each parked):
        # {"seconds", "cpu", "rss_delta_kb", "objects_delta_kb", "objects", "waiting", "parked", and
        # settled: "settled_cpu", CPU until all parked}
    python peer_escalate.py queue SRC N FOLDER DB  # N runs queued for the workers: {"started"}
    python peer_escalate.py watch SRC DB N STALL   # runs waiting at their approval: {"waiting", "last", "ids"}
    python peer_escalate.py next SRC DB RUN SINCE  # the run's first turn done at or after SINCE: {"next_turn"}
    python peer_escalate.py decided SRC DB         # when each escalation was decided: {id: epoch s}
"""

from __future__ import annotations

import asyncio
import collections
import ctypes
import gc
import json
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from peer_langgraph import SHORT, pymalloc_kb, rss_kb

HERE = Path(__file__).resolve().parent

WORKFLOW = '''prompt p: """Do the next step of the task."""
agent worker:
    instruction p
flow main:
    $x = $input
    loop max 9 do
        $x = run agent worker $x
    end
    return $x
'''
# 10 model turns: the first asks for the approval, the second is the same call going on after it.
SCRIPT = ("agents:\n  worker:\n"
          "    - escalate: {reason: architecture_decision, question: 'Go on?', options: [{id: go, label: Go}]}\n"
          + "".join(f"    - 'reply {i}'\n" for i in range(2, 11)))


def write_workload(folder: Path) -> tuple[Path, Path]:
    (folder / "loop.sr").write_text(WORKFLOW)
    (folder / "loop.yaml").write_text(SCRIPT)
    return folder / "loop.sr", folder / "loop.yaml"


def event_time(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()


def child_turns(src: Path, turns: int) -> dict[str, float]:
    """One round of bench_durable.py's per-turn run (the measured tree's own copy, so that it
    matches that tree's engine), warmed up, in memory then durable: wall seconds per turn, and CPU
    seconds per turn between a short and a long run (what is paid once cancels out)."""
    helpers = src / "tests" / "benchmarks"
    sys.path.insert(0, str(helpers if (helpers / "bench_durable.py").is_file() else HERE))
    from bench_durable import one_run

    from engine.runtime.adk_setup import prepare_adk

    def timed(count: int, durable: bool) -> tuple[float, float]:
        cpu = time.process_time()
        per_turn = asyncio.run(one_run(count, Path(tempfile.mkdtemp()), durable))
        return per_turn, time.process_time() - cpu

    prepare_adk()
    timed(SHORT, False)
    timed(SHORT, True)
    result = {}
    for name, durable in (("memory", False), ("durable", True)):
        wall, cpu = timed(turns, durable)
        result[name], result[f"{name}_cpu"] = wall, (cpu - timed(SHORT, durable)[1]) / (turns - SHORT)
    return result


async def waiting_count(db: Any, at_least: int, *, timeout: float, stall: float) -> tuple[int, float]:
    """Poll the pending escalations until `at_least` wait, or none more came for `stall` seconds;
    returns how many and when the last one came."""
    count, last = 0, time.time()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = len(db.pending_ids())
        if now > count:
            count, last = now, time.time()
        if count >= at_least or time.time() - last > stall:
            break
        await asyncio.sleep(0.05)
    return count, last


async def one_by_one(engine: Any, broker: Any, workflow: Any, count: int) -> None:
    """`count` runs, each started once the one before waits at its approval (its escalation
    recorded and listed: the broker's `raised`), as LangGraph's loop of `invoke`s does."""
    from engine.escalation.broker import RAISED

    asked: dict[str, asyncio.Future[None]] = {}

    def heard(event: Any) -> None:
        future = asked.get(event.pending.escalation.run_id)
        if event.kind == RAISED and future is not None and not future.done():
            future.set_result(None)

    stop = broker.subscribe(heard)
    try:
        loop = asyncio.get_running_loop()
        for _ in range(count):
            future = loop.create_future()
            handle = engine.start_run(workflow, input="go")
            asked[handle.id] = future
            await asyncio.wait_for(future, 300)
            del asked[handle.id]
    finally:
        stop()


async def child_many(count: int, folder: Path, state: str) -> dict[str, Any]:
    """`count` runs started in this process and brought to their approval (a live process holding
    them); the time and the memory they hold, at `state`: `approval` (all started at once, the
    parking bound set far away: each run a live coroutine), `parked` (all at once, settled: every
    run parked in this process, its execution ended, rows only; a tree that does not park live
    runs is measured after a minute) or `sequential` (one after another, settled as `parked`)."""
    import os

    # Read once, at the import of engine/services/parking.py: every run parks 1 s after it asks
    # (the default holds a few live for minutes), or none does (a day, and no bound on how many
    # wait live: beyond LIVE_WAITING, 8, runs parked after 2 s, and the row measured mostly
    # parked runs: 11 KB of objects a run, not 45).
    os.environ["ESCALATE_PARK_LIVE_AFTER"] = "86400" if state == "approval" else "1"
    if state == "approval":
        os.environ["ESCALATE_LIVE_WAITING"] = str(count + 1)
    parks = state != "approval"
    from engine.runtime.adk_setup import prepare_adk
    from engine.runtime.script import load_script
    from engine.services.wiring import open_services
    from rules.loader import default_rules

    prepare_adk()
    source, script = write_workload(folder)
    services = await open_services(f"sqlite:///{folder / 'many.db'}", identity="bench")
    try:
        engine = services.engine(default_rules(), workspace=folder, script=load_script(script))
        workflow = engine.load(source)
        engine.start_run(workflow, input="go")  # imports and first-use costs, outside the figures
        await waiting_count(services.db, 1, timeout=300, stall=300)
        parked = await parked_count(services.db, 1, 30.0) if parks else 0
        memory = getattr(services.parking, "memory", None)  # None: a tree without engine/kernel/memory.py
        given = await given_back(memory, 0) if parks else 0
        costs = timed_give_back(memory)
        gc.collect()
        heap, objects = pymalloc_kb(), len(gc.get_objects())
        malloc, threads, extra = malloc_kb(), threading.active_count(), {}
        before, started, cpu = rss_kb(), time.time(), time.process_time()
        cpu_started = cpu
        if state == "sequential":
            await one_by_one(engine, services.broker, workflow, count)
            last = time.time()
            waiting = len(services.db.pending_ids())
        else:
            for _ in range(count):
                engine.start_run(workflow, input="go")
            waiting, last = await waiting_count(services.db, count + 1, timeout=900, stall=300)  # a loaded host: minutes
        cpu = time.process_time() - cpu  # every thread of the process, the polling's few ms too
        if parks:
            parked = await parked_count(services.db, count + 1, 60.0) - parked
            # CPU until all parked (their parks' work, wherever the bound put it; the count's
            # half-second wait, ~10 ms of polls, too)
            extra["settled_cpu"] = time.process_time() - cpu_started
            settled = rss_kb()
            await given_back(memory, given)
            extra["given_back_kb"] = settled - rss_kb()  # the same process, a moment apart
            extra["give_backs"] = costs  # [thread CPU ms, wall ms] of each, after the first run's
        gc.collect()
        heap_after, malloc_after = pymalloc_kb(), malloc_kb()
        return {"seconds": last - started, "cpu": cpu, "rss_delta_kb": rss_kb() - before,
                "objects_delta_kb": heap_after["objects"] - heap["objects"], "objects": len(gc.get_objects()) - objects,
                "pymalloc_free_delta_kb": heap_after["free"] - heap["free"],
                **{f"malloc_{k}_delta_kb": malloc_after[k] - malloc[k] for k in malloc},
                "threads": [threads, threading.active_count()], "thread_names": thread_names(), **extra, "waiting": waiting - 1, "parked": parked}
    finally:
        services.close()


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]


def malloc_kb() -> dict[str, int]:
    """glibc malloc's bytes in use and free inside its heaps, KB (mallinfo2); {} elsewhere."""
    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return {}
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return {"used": info.uordblks // 1024, "free": info.fordblks // 1024}


def thread_names() -> dict[str, int]:
    """This process's threads by name, numbers left off (ThreadPoolExecutor-0_3: ThreadPoolExecutor-)."""
    return dict(collections.Counter(t.name.rstrip("0123456789_") for t in threading.enumerate()))


def timed_give_back(memory: Any) -> list[list[float]]:
    """The give-backs of `memory` (engine/kernel/memory.py GiveBack) from now on, each timed:
    [its thread's CPU ms, wall ms]."""
    costs: list[list[float]] = []
    if memory is not None:
        work = memory.work

        def timed() -> Any:
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                return work()
            finally:
                costs.append([round((time.thread_time() - cpu) * 1000, 1), round((time.perf_counter() - wall) * 1000, 1)])

        memory.work = timed
    return costs


async def given_back(memory: Any, since: int) -> int:
    """Wait for `memory` (engine/kernel/memory.py GiveBack) to have given the process's memory
    back more than `since` times (debounced: a moment after the last park); None (a tree
    without it) waits 5 s, as long as one with it would at most on an idle host."""
    for _ in range(50 if memory is None else 600):
        if memory is not None and memory.given > since:
            return memory.given
        await asyncio.sleep(0.1)
    return since


async def parked_count(db: Any, at_least: int, stall: float) -> int:
    """Poll the runs parked until `at_least`, or none more for `stall` seconds, then a moment for
    their executions' last references to go (the row says parked just before)."""
    count, last = 0, time.monotonic()
    while count < at_least and time.monotonic() - last < stall:
        now = sum(1 for row in db.list_runs() if row["status"] == "parked")
        if now > count:
            count, last = now, time.monotonic()
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.5)
    return count


async def child_queue(count: int, folder: Path, db: str) -> dict[str, float]:
    """`count` runs queued for the workers (as `run --detach` does), in this one process."""
    from engine.runtime.script import load_script
    from engine.services.wiring import open_services
    from rules.loader import default_rules

    source, script = write_workload(folder)
    services = await open_services(db, identity="bench")
    try:
        engine = services.engine(default_rules(), workspace=folder, script=load_script(script))
        workflow = engine.load(source)
        started = time.time()
        for _ in range(count):
            engine.queue_run(workflow, input="go")
        return {"started": started}
    finally:
        services.close()


async def child_watch(db_url: str, count: int, stall: float) -> dict[str, Any]:
    """How many runs of the database wait at their approval (polled until `count` or a stall),
    when the last came, and their escalations' ids."""
    from engine.durable.database import Database

    db = Database(db_url)
    try:
        waiting, last = await waiting_count(db, count, timeout=900, stall=stall)
        return {"waiting": waiting, "last": last, "ids": sorted(db.pending_ids())}
    finally:
        db.close()


def child_next(db_url: str, run_id: str, since: float) -> dict[str, float]:
    """When the run's first model turn at or after `since` was done (its events in the database:
    a worker's run writes no file)."""
    from engine.durable.database import Database

    db = Database(db_url)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            done = [event_time(e) for e in db.events_of(run_id) if e["type"] == "agent_result"]
            later = [t for t in done if t >= since - 0.001]  # the times have ms
            if later:
                return {"next_turn": min(later)}
            time.sleep(0.02)
        raise SystemExit(f"run {run_id}: no turn after the answer within 300 s")
    finally:
        db.close()


def child_decided(db_url: str) -> dict[str, float]:
    """When each escalation of the database was decided (its row, written by the answering process)."""
    from engine.durable.database import Database

    db = Database(db_url)
    try:
        return {row["id"]: row["decided_at"] for run in db.list_runs(include_finished=True)
                for row in db.escalations_of(run["run_id"]) if row["decided_at"] is not None}
    finally:
        db.close()


def child(argv: list[str]) -> None:
    name, src, *rest = argv
    if name == "turns":
        result: Any = child_turns(Path(src), int(rest[0]))
    elif name == "many":
        result = asyncio.run(child_many(int(rest[0]), Path(rest[1]), rest[2] if len(rest) > 2 else "approval"))
    elif name == "queue":
        result = asyncio.run(child_queue(int(rest[0]), Path(rest[1]), rest[2]))
    elif name == "watch":
        result = asyncio.run(child_watch(rest[0], int(rest[1]), float(rest[2])))
    elif name == "next":
        result = child_next(rest[0], rest[1], float(rest[2]))
    elif name == "decided":
        result = child_decided(rest[0])
    else:
        raise SystemExit(f"unknown child {name!r}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    child(sys.argv[1:])
