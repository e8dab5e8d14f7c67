"""N runs waiting on people at once (issue 26): prints numbers, asserts nothing.

One SQLite file and one `escalate worker --concurrency 8`, or (`--backend postgresql`) a
PostgreSQL server this script starts (tests/pg_server.py) and two workers (`--workers`,
`--concurrency`). Each run is an agent that escalates (two options) and, once answered, takes
one more model turn and ends.

1. Queue N runs (default 10,000) from one process, as `run --detach` does (engine.queue_run).
2. Start the worker(s): seconds until all N wait on a person (their escalation pending), the
   workers' CPU, each worker's RSS before and after (VmRSS, /proc), hence memory per waiting run.
3. `escalate runs --format json` with the N waiting: seconds, and how many it lists.
4. `--console` (on with PostgreSQL): the console (`escalate console --db URL` on a
   pseudo-terminal): seconds to its first frame and until its inbox lists all N (`Inbox (N)`).
5. Answer K of them (default 200) one after another from this process (the same conditional
   update and news as `escalate answer`, without a process start per answer), each once the
   previous run ended: answer -> next turn (the run's end, wall clock, written by whichever
   worker continued it), p50/p95/max, with the workers running and the N-K others still waiting.
6. `--drain` (on with PostgreSQL; `--no-drain`): answer all the others at once and wait for every
   run's end; then the audit: runs lost (not done, escalation not decided), decisions doubled,
   recorded steps run again (ESCALATE_STEP_AUDIT), runs continued twice (a `continued` line per
   run in the workers' logs: exactly one expected), and how the continuations split between them.

Run: python tests/benchmarks/bench_waiting.py [--runs 10000] [--answers 200] [--concurrency 8]
         [--keep DIR] [--again]
     nice -n 10 python tests/benchmarks/bench_waiting.py --backend postgresql [--runs 10000] [--answers 200]
`--keep DIR` (SQLite): the files go there and stay; `--again` with it: DIR already holds runs
waiting (an earlier `--keep`): steps 1 and 2 are skipped, the others measured on them with a fresh worker.
CPU seconds are printed beside wall times: this host is shared, and its load stretches wall time.
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

from first_frame import MARKER, _command, _on_terminal  # noqa: E402

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


def bench(url: str, folder: Path, runs: int, answers: int, concurrency: int, n_workers: int, *, again: bool = False,
          console: bool = False, drain: bool = False) -> None:
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
    steps = folder / "steps.jsonl"
    env = {**os.environ, "ESCALATE_STEP_AUDIT": str(steps)} if drain else None
    procs = [WorkerProcess(url, folder, concurrency=concurrency, name=f"w{i}", env=env) for i in range(n_workers)]
    try:
        for proc in procs:
            proc.wait_ready(300)
        idle = [rss_mib(p.proc.pid) for p in procs]
        cpu0 = [cpu_s(p.proc.pid) for p in procs]
        brought = _wait_all_waiting(db, runs)
        time.sleep(3)  # the last parks settle
        full = [rss_mib(p.proc.pid) for p in procs]
        cpu = sum(cpu_s(p.proc.pid) for p in procs) - sum(cpu0)
        print(f"  {runs} runs brought to their approval by {n_workers} worker(s) x {concurrency}: {brought:.1f} s "
              f"({runs / brought:.0f} runs/s); the workers' CPU {cpu:.0f} s ({1000 * cpu / runs:.1f} ms a run)   "
              f"(load {load()})", flush=True)
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
              f"   (load {load()})", flush=True)
        if console:
            first, everything = _console(url, runs, folder)
            print(f"  console: first frame {first:.2f} s, all {runs} listed (Inbox ({runs})) {everything:.2f} s   "
                  f"(load {load()})", flush=True)
        latencies = answer_one_by_one(db, answers)
        print(f"  answer -> next turn (the run's end), {n_workers} worker(s) running, {runs - answers} others waiting: "
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
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--workers", type=int, help="how many workers (default: 1 on SQLite, 2 on PostgreSQL)")
    parser.add_argument("--console", action=argparse.BooleanOptionalAction,
                        help="measure the console's first frame and full inbox (default: on with PostgreSQL)")
    parser.add_argument("--drain", action=argparse.BooleanOptionalAction,
                        help="answer the others at once, then the audit (default: on with PostgreSQL)")
    parser.add_argument("--keep", type=Path, help="an empty folder for the files (kept, to look at the database after)")
    parser.add_argument("--again", action="store_true", help="--keep DIR holds runs waiting already: measure on them")
    args = parser.parse_args()
    postgres = args.backend == "postgresql"
    if args.again and (postgres or args.keep is None):
        parser.error("--again needs --keep DIR, on SQLite")
    with tempfile.TemporaryDirectory(prefix="bench-waiting-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        server = None
        if postgres:
            from tests.pg_server import PostgresServer

            server = PostgresServer().start()
            url = server.new_database()
        else:
            url = f"sqlite:///{folder / 'escalate.db'}"
        try:
            print(f"{args.backend}:", flush=True)
            bench(url, folder, args.runs, min(args.answers, args.runs), args.concurrency,
                  args.workers or (2 if postgres else 1), again=args.again,
                  console=postgres if args.console is None else args.console,
                  drain=postgres if args.drain is None else args.drain)
        finally:
            if server is not None:
                server.stop()


if __name__ == "__main__":
    main()
