"""Where the memory of a waiting run goes (issue 26): prints numbers, asserts nothing.

bench_peer.py's "memory per waiting run" is one RSS delta over one burst of N runs. This script
takes it apart, in one process, for the two ways a run waits for a person:

- `live`: N runs started in this process (`Engine.start_run`, as a console or `run --wait`) and
  brought to their approval, measured before the parking bound (ESCALATE_PARK_LIVE_AFTER set to a
  day): each stays a live coroutine holding its ADK runner and session;
- `live-parked`: the same, measured once settled: each run parked in this process past the bound
  (ESCALATE_PARK_LIVE_AFTER=1; its execution ended; its handle and its listed escalation kept,
  engine/services/parking.py LiveParking);
- `worker`: N runs queued for an in-process `escalate worker --concurrency 8`, each parked at
  its approval (its execution ended: only rows should stay).

A first run is brought to its approval before anything is measured (imports, first use). Then
three batches of N; after each (and a full collection) it reads: RSS (/proc), the bytes Python
objects hold (pymalloc's allocated blocks, and its free space inside its arenas: what a burst
leaves behind), glibc malloc in use and free (mallinfo2), threads, and the live objects by type
(gc.get_objects). Printed per run: batch 1 against the first run (what bench_peer.py's figure
holds: one-time growth included), and batch 3 against batch 2 (the steady cost). `--trace K`
also starts tracemalloc after the first run and prints, for batch 3 against batch 2, the bytes
per run by the innermost escalate frame that allocated them and the K largest tracebacks
(tracemalloc's own bookkeeping then inflates the RSS figures: read those without it). With
the parked modes, each batch is read once the process has given its free memory back after the
batch parked (engine/kernel/memory.py: gc.collect, glibc's malloc_trim(0)); printed: each
give-back's CPU and wall ms, and how many there were (one per batch: debounced, not per run).

Run: python tests/benchmarks/bench_run_memory.py live|live-parked [--runs 100] [--trace 10]
     python tests/benchmarks/bench_run_memory.py worker [--runs 100]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from peer_escalate import given_back, malloc_kb, timed_give_back, waiting_count, write_workload
from peer_langgraph import pymalloc_kb, rss_kb

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def reading() -> dict[str, Any]:
    gc.collect()
    kinds = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())
    heap = pymalloc_kb()
    # Under tracemalloc (its hooks around the allocator) Python prints no pymalloc figures: 0 then.
    values: dict[str, Any] = {"rss": rss_kb(), "py_objects": heap.get("objects", 0), "py_free": heap.get("free", 0),
                              "threads": threading.active_count(),
                              "objects": sum(kinds.values()), "kinds": kinds}
    values.update({f"malloc_{k}": v for k, v in malloc_kb().items()})
    return values


def per_run(after: dict[str, Any], before: dict[str, Any], runs: int, title: str) -> None:
    parts = [f"{key} {(after[key] - before[key]) / runs:.1f} KB"
             for key in ("rss", "py_objects", "py_free", "malloc_used", "malloc_free") if key in after]
    print(f"{title}, per run: " + ", ".join(parts)
          + f", objects {(after['objects'] - before['objects']) / runs:.1f}, threads {before['threads']} -> {after['threads']}")


def kinds(after: dict[str, Any], before: dict[str, Any], runs: int, top: int = 25) -> None:
    grown = {k: v - before["kinds"].get(k, 0) for k, v in after["kinds"].items()}
    for name, count in sorted(grown.items(), key=lambda kv: -kv[1])[:top]:
        if count <= 0:
            break
        print(f"  {count / runs:7.2f} a run  {name}")


def traced(after: tracemalloc.Snapshot, before: tracemalloc.Snapshot, runs: int, top: int) -> None:
    """Bytes per run by the innermost escalate frame, then the largest tracebacks."""
    diff = after.compare_to(before, "traceback")
    ours: collections.Counter[str] = collections.Counter()
    for stat in diff:
        frames = [f for f in stat.traceback if f"{os.sep}engine{os.sep}" in f.filename or f.filename.startswith("<escalate:")]
        where = f"{frames[-1].filename.split(os.sep + 'engine' + os.sep)[-1]}:{frames[-1].lineno}" if frames else "(no escalate frame)"
        ours[where] += stat.size_diff
    print(f"  traced: {sum(s.size_diff for s in diff) / runs / 1024:.1f} KB a run; by the innermost escalate frame:")
    for where, size in ours.most_common(top):
        print(f"  {size / runs:8.0f} B a run  {where}")
    for stat in diff[:top]:
        print(f"  --- {stat.size_diff / runs:.0f} B, {stat.count_diff / runs:.1f} blocks a run")
        for line in stat.traceback.format()[-12:]:
            print("     ", line)


async def live(runs: int, trace: int, parked: bool) -> None:
    # Read once, when engine/services/parking.py is imported: each run parks 1 s after it asks
    # (past the bound), or none does (a day).
    os.environ["ESCALATE_PARK_LIVE_AFTER"] = "1" if parked else "86400"
    from engine.durable.database import PARKED
    from engine.runtime.adk_setup import prepare_adk
    from engine.runtime.script import load_script
    from engine.services.wiring import open_services
    from rules.loader import default_rules

    prepare_adk()
    folder = Path(tempfile.mkdtemp(prefix="run-memory-"))
    source, script = write_workload(folder)
    services = await open_services(f"sqlite:///{folder / 'live.db'}", identity="bench")
    assert services.db is not None
    try:
        engine = services.engine(default_rules(), workspace=folder, script=load_script(script))
        workflow = engine.load(source)
        engine.start_run(workflow, input="go")
        await waiting_count(services.db, 1, timeout=300, stall=300)
        while parked and not any(row["status"] == PARKED for row in await asyncio.to_thread(services.db.list_runs)):
            await asyncio.sleep(0.2)
        memory = services.parking.memory if parked and services.parking is not None else None
        await given_back(memory, 0) if memory is not None else None
        costs = timed_give_back(memory)

        async def batch(total: int) -> None:
            since = memory.given if memory is not None else 0
            for _ in range(runs):
                engine.start_run(workflow, input="go")
            await waiting_count(services.db, total, timeout=900, stall=300)
            while parked and sum(1 for row in await asyncio.to_thread(services.db.list_runs) if row["status"] == PARKED) < total:
                await asyncio.sleep(0.2)
            await asyncio.sleep(1.5 if parked else 0.5)  # the last events written; the executions let go
            if memory is not None:
                await given_back(memory, since)

        await measure(batch, runs, trace)
        if memory is not None:
            print(f"give-backs after the first run (CPU ms, wall ms): {costs}")
    finally:
        services.close()


async def worker(runs: int, trace: int) -> None:
    from engine.durable.database import PARKED
    from engine.runtime.adk_setup import prepare_adk
    from engine.services import open_database
    from engine.services.worker import Worker

    prepare_adk()
    folder = Path(tempfile.mkdtemp(prefix="run-memory-"))
    url = f"sqlite:///{folder / 'worker.db'}"
    db = open_database(url)
    serving = Worker(db, 8, lambda line: None)
    task = asyncio.create_task(serving.serve())

    async def queue(count: int, total: int) -> None:
        since = serving.parking.memory.given
        # queued from another process, as `run --detach` does
        await asyncio.to_thread(subprocess.run, [sys.executable, str(HERE / "peer_escalate.py"), "queue", str(ROOT),
                                                 str(count), str(folder), url], check=True, capture_output=True)
        while sum(1 for row in await asyncio.to_thread(db.list_runs) if row["status"] == PARKED) < total:
            await asyncio.sleep(0.2)
        await asyncio.sleep(1.5)
        await given_back(serving.parking.memory, since)

    try:
        while getattr(serving, "parking", None) is None:  # the worker opening its services
            await asyncio.sleep(0.2)
        await queue(1, 1)
        costs = timed_give_back(serving.parking.memory)
        await measure(lambda total: queue(runs, total), runs, trace)
        print(f"give-backs after the first run (CPU ms, wall ms): {costs}")
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # the worker's own handler: it stops as on SIGTERM
        await asyncio.wait_for(task, 60)


async def measure(batch: Any, runs: int, trace: int) -> None:
    first = reading()
    if trace:
        tracemalloc.start(25)
    readings, snapshots = [], []
    for number in range(3):
        await batch(1 + runs * (number + 1))
        readings.append(reading())
        snapshots.append(tracemalloc.take_snapshot() if trace else None)
    per_run(readings[0], first, runs, f"batch 1 ({runs} runs) against the first run")
    per_run(readings[2], readings[1], runs, "batch 3 against batch 2")
    print("  objects by type, batch 3 against batch 2:")
    kinds(readings[2], readings[1], runs)
    if trace:
        traced(snapshots[2], snapshots[1], runs, trace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("live", "live-parked", "worker"))
    parser.add_argument("--runs", type=int, default=100, help="runs per batch")
    parser.add_argument("--trace", type=int, default=0, help="tracemalloc: this many tracebacks (0: off)")
    args = parser.parse_args()
    print(f"{args.mode}: 3 batches of {args.runs}, load {os.getloadavg()[0]:.1f}, {time.strftime('%H:%M:%S')}")
    if args.mode in ("live", "live-parked"):
        asyncio.run(live(args.runs, args.trace, args.mode == "live-parked"))
    else:
        asyncio.run(worker(args.runs, args.trace))


if __name__ == "__main__":
    main()
