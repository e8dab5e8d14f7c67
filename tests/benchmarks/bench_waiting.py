"""N runs waiting on people at once (issue 26): prints numbers, asserts nothing.

One SQLite file (or PostgreSQL, `--backend postgresql`: a server this script starts), one
`escalate worker --concurrency 8` (`--workers` for more). Each run is an agent that escalates
(two options) and, once answered, takes one more model turn and ends.

1. Queue N runs (default 10,000) from one process, as `run --detach` does (engine.queue_run).
2. Start the worker(s): seconds until all N wait on a person (their escalation pending), the
   worker's RSS before and after (VmRSS, /proc), hence memory per waiting run.
3. `escalate runs --format json` with the N waiting: seconds, and how many it lists.
4. Answer K of them (default 200) one after another from this process (the same conditional
   update and news as `escalate answer`, without a process start per answer), each once the
   previous run ended: answer -> next turn (the run's end, wall clock, written by the worker),
   p50/p95/max, with the worker running and the N-K others still waiting.

Run: python tests/benchmarks/bench_waiting.py [--runs 10000] [--answers 200] [--concurrency 8]
         [--keep DIR] [--again]
`--keep DIR`: the files go there and stay; `--again` with it: DIR already holds runs waiting
(an earlier `--keep`): steps 1 and 2 are skipped, 3 and 4 measured on them with a fresh worker.
CPU seconds are printed beside wall times: this host is shared, and its load stretches wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from engine.durable.database import Database  # noqa: E402
from tests.workers.procs import WorkerProcess, answer_directly  # noqa: E402

FLOW = '''streetrace v1

prompt work: """You do the work."""

agent asker:
    instruction work

flow main:
    $first = run agent asker $input
    return $first
'''
SCRIPT = '''agents:
  asker:
    - escalate:
        reason: architecture_decision
        question: "Keep the old API?"
        options:
          - {id: keep, label: "Keep it", recommended: true}
          - {id: drop, label: "Drop it"}
    - "built"
'''


def answer_one_by_one(db: Database, answers: int) -> list[float]:
    """answer -> the run's end (ms), each answered once the previous one ended."""
    latencies = []
    for row in db.pending_escalations()[:answers]:
        run_id = row["run_id"]
        at = time.time()
        answer_directly(db, row)
        end = time.monotonic() + 60
        while True:
            run = db.get_run(run_id)
            if run is not None and run["status"] == "done":
                latencies.append(1000 * (run["finished"] - at))
                break
            if time.monotonic() > end:
                raise TimeoutError(f"{run_id} not continued within 60 s of its answer")
            time.sleep(0.005)
    return latencies


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else (values[0] if values else float("nan"))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _queue(url: str, folder: Path, count: int) -> float:
    from engine.runtime.script import load_script
    from engine.services import open_services
    from rules import load_rules

    services = await open_services(url, identity="escalate run")
    engine = services.engine(load_rules(), script=load_script(str(folder / "flow.yaml")), workspace=folder)
    try:
        workflow = engine.load(folder / "flow.sr")
        start = time.monotonic()
        for i in range(count):
            engine.queue_run(workflow, input=f"go {i}", task="wait")
        return time.monotonic() - start
    finally:
        services.close()


def pending_count(db: Database) -> int:
    import sqlalchemy as sa

    from engine.durable.database import escalations

    with db.engine.connect() as c:
        return int(c.execute(sa.select(sa.func.count()).select_from(escalations)
                             .where(escalations.c.status == "pending")).scalar() or 0)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(url: str, folder: Path, runs: int, answers: int, concurrency: int, n_workers: int, again: bool) -> None:
    if not again:
        (folder / "flow.sr").write_text(FLOW)
        (folder / "flow.yaml").write_text(SCRIPT)
        cpu = time.process_time()
        queued = asyncio.run(_queue(url, folder, runs))
        print(f"  queued {runs} runs in {queued:.1f} s ({1000 * queued / runs:.2f} ms a run; CPU "
              f"{1000 * (time.process_time() - cpu) / runs:.2f} ms a run, start-up included)   (load {load()})", flush=True)
    db = Database(url)
    if again:
        runs = pending_count(db)
        print(f"  again: {runs} runs waiting in {folder}", flush=True)
    procs = [WorkerProcess(url, folder, concurrency=concurrency, name=f"w{i}") for i in range(n_workers)]
    try:
        for proc in procs:
            proc.wait_ready(300)
        idle = [rss_mib(p.proc.pid) for p in procs]
        cpu0 = [cpu_s(p.proc.pid) for p in procs]
        start = time.monotonic()
        while pending_count(db) < runs:
            if time.monotonic() - start > 7200:
                raise TimeoutError(f"only {pending_count(db)} of {runs} waiting after 2 h")
            time.sleep(0.5)
        brought = time.monotonic() - start
        time.sleep(3)  # the last parks settle
        full = [rss_mib(p.proc.pid) for p in procs]
        cpu = sum(cpu_s(p.proc.pid) for p in procs) - sum(cpu0)
        print(f"  {runs} runs brought to their approval by {n_workers} worker(s) x {concurrency}: {brought:.1f} s "
              f"({runs / brought:.0f} runs/s); the workers' CPU {cpu:.0f} s ({1000 * cpu / runs:.1f} ms a run)   "
              f"(load {load()})")
        for i, (before, after) in enumerate(zip(idle, full)):
            print(f"  worker {i} RSS: {before:.0f} MiB ready, {after:.0f} MiB with {runs} runs waiting "
                  f"({1024 * (after - before) / runs:.1f} KiB per waiting run)")
        t = time.monotonic()
        listed = subprocess.run([sys.executable, "-m", "engine", "runs", "--db", url, "--format", "json"],
                                capture_output=True, text=True, cwd=folder, check=True)
        took = time.monotonic() - t
        children = os.times()
        print(f"  escalate runs --format json: {len(json.loads(listed.stdout))} runs listed in {took:.2f} s "
              f"(its CPU {children.children_user + children.children_system:.2f} s: the only child reaped yet)"
              f"   (load {load()})")
        latencies = answer_one_by_one(db, answers)
        print(f"  answer -> next turn (the run's end), worker running, {runs - answers} others waiting: "
              f"n={len(latencies)}, p50 {statistics.median(latencies):.0f} ms, p95 {p95(latencies):.0f} ms, "
              f"max {max(latencies):.0f} ms   (load {load()})")
        print(f"  worker RSS after: {', '.join(f'{rss_mib(p.proc.pid):.0f} MiB' for p in procs)}")
    finally:
        for proc in procs:
            proc.stop(120)
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--keep", type=Path, help="an empty folder for the files (kept, to look at the database after)")
    parser.add_argument("--again", action="store_true", help="--keep DIR holds runs waiting already: measure 3 and 4 on them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-waiting-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        server = None
        if args.backend == "postgresql":
            from tests.pg_server import PostgresServer

            server = PostgresServer().start()
            url = server.new_database()
        else:
            url = f"sqlite:///{folder / 'escalate.db'}"
        try:
            print(f"{args.backend}:", flush=True)
            bench(url, folder, args.runs, args.answers, args.concurrency, args.workers, args.again)
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
