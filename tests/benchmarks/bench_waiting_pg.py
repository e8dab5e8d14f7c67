"""N runs waiting on people on one PostgreSQL database, two workers (issue 26): prints numbers,
asserts nothing.

A PostgreSQL server this script starts (tests/pg_server.py), two `escalate worker --concurrency 8`
processes (`--workers`, `--concurrency`). The runs, the flow and the helpers are
bench_waiting.py's (the SQLite, one-worker figure): each run is an agent that escalates (two
options) and, once answered, takes one more model turn and ends.

1. Queue N runs (default 10,000), as `run --detach` does.
2. Start the workers: seconds until all N wait on a person; each worker's RSS before and after.
3. `escalate runs --format json` with the N waiting: seconds, and how many it lists.
4. The console (`escalate console --db URL` on a pseudo-terminal): seconds to its first frame
   and until its inbox lists all N (`Inbox (N)` on the screen).
5. Answer K of them (default 200) one after another from this process, each once the previous
   run ended: answer -> next turn (the run's end, written by whichever worker continued it),
   p50/p95/max, with the N-K others still waiting.
6. Unless `--no-drain`: answer all the others at once and wait for every run's end; then the
   audit: runs lost (not done, escalation not decided), decisions doubled, recorded steps run
   again (ESCALATE_STEP_AUDIT), runs continued twice (a `continued` line per run in the two
   workers' logs: exactly one expected), and how the continuations split between the workers.

Run: nice -n 10 python tests/benchmarks/bench_waiting_pg.py [--runs 10000] [--answers 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from bench_waiting import FLOW, SCRIPT, _queue, answer_one_by_one, load, p95, pending_count, rss_mib  # noqa: E402
from first_frame import MARKER, _command, _on_terminal  # noqa: E402

from engine.durable.database import Database  # noqa: E402
from tests.workers.procs import WorkerProcess, answer_directly  # noqa: E402


def _wait_all_waiting(db: Database, runs: int, limit: float = 7200.0) -> float:
    start = time.monotonic()
    while pending_count(db) < runs:
        if time.monotonic() - start > limit:
            raise TimeoutError(f"only {pending_count(db)} of {runs} waiting after {limit:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - start


def _console(url: str, runs: int, folder: Path) -> tuple[float, float]:
    """(seconds to the console's first frame, seconds until its inbox lists all `runs`)."""
    argv = _command(["console", "--db", url])
    old = os.getcwd()
    os.chdir(folder)  # the console's workspace: the benchmark's folder
    try:
        first = _on_terminal(argv, MARKER)
        listed = _on_terminal(argv, f"Inbox ({runs})".encode())
    finally:
        os.chdir(old)
    return first, listed


def _drain(db: Database, runs: int) -> float:
    """Answer every pending escalation at once; seconds until every run is done."""
    start = time.monotonic()
    for row in db.pending_escalations():
        answer_directly(db, row)
    import sqlalchemy as sa

    from engine.durable.database import runs as runs_table

    while True:
        with db.engine.connect() as c:
            done = int(c.execute(sa.select(sa.func.count()).select_from(runs_table)
                                 .where(runs_table.c.status == "done")).scalar() or 0)
        if done >= runs:
            return time.monotonic() - start
        if time.monotonic() - start > 3600:
            raise TimeoutError(f"only {done} of {runs} runs done an hour after their answers")
        time.sleep(0.5)


def _audit(db: Database, steps: Path, procs: list[WorkerProcess]) -> str:
    import sqlalchemy as sa

    from engine.durable.database import escalations, events, runs

    with db.engine.connect() as c:
        not_done = int(c.execute(sa.select(sa.func.count()).select_from(runs).where(runs.c.status != "done")).scalar() or 0)
        undecided = int(c.execute(sa.select(sa.func.count()).select_from(escalations)
                                  .where(escalations.c.status != "decided")).scalar() or 0)
        decisions = Counter((run_id, json.loads(fields).get("id")) for run_id, fields in
                            c.execute(sa.select(events.c.run_id, events.c.fields).where(events.c.type == "decision")))
    doubled = sum(n - 1 for n in decisions.values() if n > 1)
    recorded: set[str] = set()
    repeated = 0
    for line in steps.read_text(encoding="utf-8").splitlines() if steps.exists() else []:
        entry = json.loads(line)
        if entry["kind"] == "recorded":
            recorded.add(entry["key"])
        elif entry["key"] in recorded:
            repeated += 1
    continued: Counter[str] = Counter()
    by_worker = []
    for proc in procs:
        mine = re.findall(r"^(\S+): continued ", proc.text, re.MULTILINE)
        by_worker.append(len(mine))
        continued.update(mine)
    twice = sum(1 for n in continued.values() if n > 1)
    return (f"lost {not_done} (runs not done) + {undecided} (escalations not decided), decisions doubled {doubled}, "
            f"recorded steps run again {repeated}, runs continued twice {twice}; continued by each worker: "
            f"{', '.join(map(str, by_worker))}")


def bench(url: str, folder: Path, runs: int, answers: int, concurrency: int, n_workers: int, drain: bool) -> None:
    (folder / "flow.sr").write_text(FLOW)
    (folder / "flow.yaml").write_text(SCRIPT)
    queued = asyncio.run(_queue(url, folder, runs))
    print(f"  queued {runs} runs in {queued:.1f} s ({1000 * queued / runs:.2f} ms a run)   (load {load()})", flush=True)
    steps = folder / "steps.jsonl"
    env = {**os.environ, "ESCALATE_STEP_AUDIT": str(steps)}
    db = Database(url)
    procs = [WorkerProcess(url, folder, concurrency=concurrency, name=f"w{i}", env=env) for i in range(n_workers)]
    try:
        for proc in procs:
            proc.wait_ready(300)
        idle = [rss_mib(p.proc.pid) for p in procs]
        brought = _wait_all_waiting(db, runs)
        time.sleep(3)  # the last parks settle
        full = [rss_mib(p.proc.pid) for p in procs]
        print(f"  {runs} runs brought to their approval by {n_workers} workers x {concurrency}: {brought:.1f} s "
              f"({runs / brought:.0f} runs/s)   (load {load()})", flush=True)
        for i, (before, after) in enumerate(zip(idle, full)):
            print(f"  worker {i} RSS: {before:.0f} MiB ready, {after:.0f} MiB with {runs} runs waiting")
        t = time.monotonic()
        listed = subprocess.run([sys.executable, "-m", "engine", "runs", "--db", url, "--format", "json"],
                                capture_output=True, text=True, cwd=folder, check=True)
        took = time.monotonic() - t
        print(f"  escalate runs --format json: {len(json.loads(listed.stdout))} runs listed in {took:.2f} s", flush=True)
        first, everything = _console(url, runs, folder)
        print(f"  console: first frame {first:.2f} s, all {runs} listed (Inbox ({runs})) {everything:.2f} s   "
              f"(load {load()})", flush=True)
        latencies = answer_one_by_one(db, answers)
        print(f"  answer -> next turn (the run's end), {n_workers} workers running, {runs - answers} others waiting: "
              f"n={len(latencies)}, p50 {statistics.median(latencies):.0f} ms, p95 {p95(latencies):.0f} ms, "
              f"max {max(latencies):.0f} ms   (load {load()})", flush=True)
        print(f"  worker RSS after: {', '.join(f'{rss_mib(p.proc.pid):.0f} MiB' for p in procs)}", flush=True)
        if drain:
            took = _drain(db, runs)
            print(f"  the other {runs - answers} answered at once: all done {took:.1f} s later "
                  f"({(runs - answers) / took:.0f} runs/s)   (load {load()})")
            print(f"  worker RSS at the end: {', '.join(f'{rss_mib(p.proc.pid):.0f} MiB' for p in procs)}")
            print(f"  audit: {_audit(db, steps, procs)}", flush=True)
    finally:
        for proc in procs:
            proc.stop(120)
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-drain", dest="drain", action="store_false",
                        help="skip answering the others and the audit")
    args = parser.parse_args()
    from tests.pg_server import PostgresServer

    with tempfile.TemporaryDirectory(prefix="bench-waiting-pg-") as tmp:
        server = PostgresServer().start()
        try:
            print("postgresql:", flush=True)
            bench(server.new_database(), Path(tmp), args.runs, min(args.answers, args.runs), args.concurrency,
                  args.workers, args.drain)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
