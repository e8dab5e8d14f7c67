"""Workers, PostgreSQL and several consoles: figures (prints numbers; no assertions).

Every run is tests/workers/data/ask.sr: an agent's escalation (two options), a shell command,
then the flow's own question: two human decisions per run, each answer naming its own run (so a
decision that reached another run would show in that run's result).

1. Scale: W workers (default 2), R runs (default 200, so 400 escalations) queued as `run --detach`
   does, every escalation answered by a script through `escalate answer` (a new process each, 6
   at a time); audit: runs lost, decisions doubled or misrouted, recorded steps run again.
2. Throughput: R2 runs (default 100) on 1 worker, then on 2 workers, the escalations answered by
   a script in this process (the same conditional update `escalate answer` makes, without a
   process start per answer, so that the workers are what is measured): runs per second.
3. Latency between processes: a console's broker in this process (watching everything, as the
   console does) sees each escalation a worker raises (raise -> listed), answers it, and the
   worker's agent resumes (answer -> the run's `decision` event, written by the worker): p50/p95,
   split by where the run was when answered (still in its worker, or parked: then it goes
   through the queue, and waits for a free place behind the runs queued before it). Runs beyond
   the workers' places wait in the queue, and make the runs waiting for people park at once:
   `--latency-runs 40 --places 20` is 20 runs at a time per worker with no queue behind them.
4. A dead worker: 2 workers with 5 runs waiting each; one is killed (SIGKILL): seconds until all
   its runs are continued, waiting again, on the other.

On PostgreSQL (a server this script starts, tests/pg_server.py) and on SQLite.
Run: python tests/benchmarks/bench_workers.py [--runs 200] [--throughput-runs 100] [--backend both|sqlite|postgresql]
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
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from engine.durable.database import Database  # noqa: E402
from tests.workers.procs import ASK, ASK_SCRIPT, WorkerProcess, answer_args, answer_directly, audit  # noqa: E402


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 2 else (values[0] if values else float("nan"))


async def _queue(url: str, workspace: Path, count: int) -> list[str]:
    """Queue `count` runs exactly as `escalate run --detach` does (engine.queue_run), from one process."""
    from engine.runtime.script import load_script
    from engine.services import open_services
    from rules import load_rules

    services = await open_services(url, identity="escalate run")
    engine = services.engine(load_rules(), script=load_script(str(ASK_SCRIPT)), workspace=workspace)
    try:
        workflow = engine.load(ASK)
        return [engine.queue_run(workflow, input=f"go {i}", task="ask") for i in range(count)]
    finally:
        services.close()


def queue(url: str, workspace: Path, count: int) -> list[str]:
    return asyncio.run(_queue(url, workspace, count))


def queue_elsewhere(url: str, workspace: Path, count: int) -> list[str]:
    """`queue` in a process of its own, as runs come from CI jobs and servers: queueing holds
    the interpreter lock, which the console measured here must not share."""
    code = ("import json, sys; from pathlib import Path; from tests.benchmarks.bench_workers import queue; "
            "print(json.dumps(queue(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]))))")
    done = subprocess.run([sys.executable, "-c", code, url, str(workspace), str(count)], capture_output=True,
                          text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_done(db: Database, ids: list[str], answer, timeout: float = 1800.0) -> float:
    """Answer whatever is pending with `answer(row)` until every run ended; returns the seconds."""
    start = time.monotonic()
    asked: set[str] = set()
    while time.monotonic() - start < timeout:
        fresh = [row for row in db.pending_escalations() if row["id"] not in asked]
        asked.update(row["id"] for row in fresh)
        answer(fresh)
        runs = {r["run_id"]: r["status"] for r in db.list_runs(include_finished=True)}
        if all(runs.get(i) not in ("queued", "running", "waiting") for i in ids):
            return time.monotonic() - start
        time.sleep(0.02)
    raise TimeoutError("runs still going")


def workers(url: str, folder: Path, count: int, concurrency: int, env: dict[str, str] | None = None) -> list[WorkerProcess]:
    started = [WorkerProcess(url, folder, concurrency=concurrency, name=f"worker{i}-{time.monotonic_ns()}", env=env)
               for i in range(count)]
    for worker in started:
        worker.wait_ready(180)
    return started


def scale(url: str, folder: Path, runs: int, n_workers: int, limit: float = 1800.0) -> None:
    steps = folder / "steps.jsonl"
    env = {**os.environ, "ESCALATE_STEP_AUDIT": str(steps)}
    procs = workers(url, folder, n_workers, concurrency=25, env=env)
    db = Database(url)
    pool = ThreadPoolExecutor(6)
    try:
        ids = queue(url, folder, runs)

        def by_cli(rows: list[dict]) -> None:
            def one(row: dict) -> None:
                done = subprocess.run([sys.executable, "-m", "engine", *answer_args(row), "--db", url],
                                      capture_output=True, text=True, cwd=folder)
                if done.returncode not in (0, 1):
                    print("   answer failed:", done.stderr.strip())
            list(pool.map(one, rows))

        try:
            seconds = wait_done(db, ids, by_cli, timeout=limit)
            ended = f"{seconds:.1f} s"
        except TimeoutError:  # a slow host: what was done so far is still audited
            ended = f"{limit:.0f} s (stopped there; runs not done yet count as lost)"
        report = audit(db, steps)
        print(f"  scale: {n_workers} workers, {report.runs} runs, {report.escalations} escalations answered by "
              f"`escalate answer`: {report.done} done in {ended}; lost {report.lost}, doubled {report.doubled}, "
              f"misrouted {report.misrouted}   (load {load()})")
    finally:
        pool.shutdown()
        for worker in procs:
            worker.stop()
        db.close()


def throughput(url_for, folder: Path, runs: int) -> None:
    for n_workers in (1, 2):
        url = url_for()
        procs = workers(url, folder, n_workers, concurrency=50)
        db = Database(url)
        try:
            ids = queue(url, folder, runs)
            seconds = wait_done(db, ids, lambda rows: [answer_directly(db, row) for row in rows])
            report = audit(db)
            print(f"  throughput: {n_workers} worker(s): {runs} runs in {seconds:.1f} s = {runs / seconds:.2f} runs/s "
                  f"(lost {report.lost}, doubled {report.doubled}, misrouted {report.misrouted})   (load {load()})")
        finally:
            for worker in procs:
                worker.stop()
            db.close()


def latency(url: str, folder: Path, runs: int, concurrency: int) -> None:
    """A console's broker in this process; the workers in theirs (2, each running up to
    `concurrency` runs at once)."""
    from engine.durable.decisions import DecisionStore, pending_to_json
    from engine.durable.feed import Feed
    from engine.escalation.broker import RAISED, EscalationBroker
    from engine.kernel.clock import RealClock
    from tests.workers.procs import answer_for

    procs = workers(url, folder, 2, concurrency=concurrency)
    db = Database(url)
    seen: list[float] = []
    answered_at: dict[str, float] = {}
    parked: dict[str, bool] = {}  # escalation id -> its run was parked when answered
    tasks: set[asyncio.Task[None]] = set()
    writes: list[float] = []  # ms the console's `answer` took (its decision written, on its loop)

    async def console() -> None:
        broker = EscalationBroker(RealClock(), store=DecisionStore(db), identity="bench via console")
        done = asyncio.Event()
        ids: list[str] = []

        def on_event(event) -> None:
            if event.kind != RAISED:
                return
            esc = event.pending.escalation
            seen.append(time.time() - esc.created_at)

            async def answer() -> None:
                await asyncio.sleep(0.02)  # a person is not instantaneous
                run = await asyncio.to_thread(db.get_run, esc.run_id)  # parked: no worker holds it
                parked[esc.id] = run is not None and run["status"] == "parked"
                row = {"id": esc.id, "payload": pending_to_json(event.pending)}
                answered_at[esc.id] = time.time()
                try:
                    broker.answer(esc.id, answer_for(row))
                except Exception:  # withdrawn or decided meanwhile
                    answered_at.pop(esc.id, None)
                writes.append(1000 * (time.time() - answered_at.get(esc.id, time.time())))
            tasks.add(asyncio.get_running_loop().create_task(answer()))

        broker.subscribe(on_event)
        feed = Feed(broker, broker.store)
        feed.start(everything=True)
        await asyncio.sleep(0.5)
        ids.extend(await asyncio.to_thread(queue_elsewhere, url, folder, runs))

        async def finished() -> None:
            while True:
                rows = await asyncio.to_thread(db.list_runs, include_finished=True)
                status = {r["run_id"]: r["status"] for r in rows}
                if all(status.get(i) == "done" for i in ids):
                    done.set()
                    return
                await asyncio.sleep(0.2)

        await asyncio.wait_for(finished(), 900)
        feed.stop()

    try:
        asyncio.run(console())
        resumed, in_place, through_queue = [], [], []
        for run in db.list_runs(include_finished=True):
            for event in db.events_of(run["run_id"]):
                if event["type"] == "decision" and event["id"] in answered_at:
                    at = datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()
                    resumed.append(at - answered_at[event["id"]])
                    (through_queue if parked.get(event["id"]) else in_place).append(1000 * resumed[-1])
        ms = [1000 * s for s in seen]
        rs = [1000 * s for s in resumed]
        print(f"  latency, 2 workers x {concurrency} run(s) at a time:")
        print(f"  raised in a worker -> listed by a console in another process: n={len(ms)}, "
              f"p50 {statistics.median(ms):.1f} ms, p95 {p95(ms):.1f} ms, max {max(ms):.1f} ms   (load {load()})")
        print(f"  answered in the console -> the worker's agent resumed: n={len(rs)}, "
              f"p50 {statistics.median(rs):.1f} ms, p95 {p95(rs):.1f} ms, max {max(rs):.1f} ms (event times: 1 ms)")
        print(f"    the console's answer call (its conditional write, on the console's loop): p50 "
              f"{statistics.median(writes):.1f} ms, p95 {p95(writes):.1f} ms, max {max(writes):.1f} ms")
        for name, part in (("its run still in its worker", in_place), ("its run parked when answered (continued from the queue)", through_queue)):
            if part:
                print(f"    {name}: n={len(part)}, p50 {statistics.median(part):.1f} ms, p95 {p95(part):.1f} ms, "
                      f"max {max(part):.1f} ms")
    finally:
        for worker in procs:
            worker.stop()
        db.close()


def dead_worker(url: str, folder: Path) -> None:
    """Runs waiting for people are parked (no worker holds them); 10 are answered at once and
    one of the two workers is killed (SIGKILL) 0.3 s later, while it continues some of them:
    seconds until all 10 wait again, at their second question."""
    first, second = workers(url, folder, 2, concurrency=5)
    db = Database(url)
    try:
        ids = queue(url, folder, 10)

        def waiting() -> set[str]:
            pending = {row["run_id"] for row in db.pending_escalations()}
            return {r["run_id"] for r in db.list_runs() if r["run_id"] in pending and r["status"] == "parked"}

        end = time.monotonic() + 300
        while len(waiting()) < len(ids) and time.monotonic() < end:
            time.sleep(0.1)
        firsts = {row["id"] for row in db.pending_escalations()}
        for row in db.pending_escalations():
            answer_directly(db, row)
        time.sleep(0.3)
        first.kill()
        killed = time.monotonic()
        while time.monotonic() - killed < 120:
            again = {row["run_id"] for row in db.pending_escalations() if row["id"] not in firsts}
            if again >= set(ids) and waiting() >= set(ids):
                break
            time.sleep(0.02)
        took = time.monotonic() - killed
        print(f"  dead worker: 10 runs answered, one of the 2 workers killed 0.3 s later; all 10 waiting again "
              f"(parked) at their next question {took:.2f} s after SIGKILL   (load {load()})")
    finally:
        second.stop()
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--throughput-runs", type=int, default=100)
    parser.add_argument("--latency-runs", type=int, default=60)
    parser.add_argument("--scale-limit", type=float, default=1800.0, help="seconds before the scale part stops")
    parser.add_argument("--backend", choices=("both", "sqlite", "postgresql"), default="both")
    parser.add_argument("--only", choices=("scale", "throughput", "latency", "dead"), action="append")
    parser.add_argument("--places", default="1,5,20", help="latency: runs at a time per worker, one measure each")
    args = parser.parse_args()
    parts = args.only or ["scale", "throughput", "latency", "dead"]
    backends = ["postgresql", "sqlite"] if args.backend == "both" else [args.backend]
    server = None
    if "postgresql" in backends:
        from tests.pg_server import PostgresServer

        server = PostgresServer().start()
    try:
        for backend in backends:
            with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
                folder = Path(tmp)
                counter = iter(range(1000))

                def new_url() -> str:
                    if backend == "postgresql":
                        assert server is not None
                        return server.new_database()
                    return f"sqlite:///{folder / f'escalate-{next(counter)}.db'}"

                print(f"{backend}:", flush=True)
                if "scale" in parts:
                    scale(new_url(), folder, args.runs, 2, args.scale_limit)
                if "throughput" in parts:
                    throughput(new_url, folder, args.throughput_runs)
                if "latency" in parts:
                    for at_once in map(int, args.places.split(",")):  # runs at a time per worker: 2, 10 and 40 on 2 cores
                        latency(new_url(), folder, args.latency_runs, at_once)
                if "dead" in parts:
                    dead_worker(new_url(), folder)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
