"""Durable-run figures (prints numbers; no assertions).

1. Cost of durability per agent turn: a flow of N sequential scripted agent calls run in memory
   and as a durable run on SQLite (one model turn each), wall time per call, median of 5 runs
   of each, interleaved (the machine is shared). Beside them, the floor: a bare DBOS workflow of
   N steps returning a model turn's JSON, on the engine escalate gives DBOS and on the one DBOS
   makes itself. `--trees DIR ...`: the same rounds for other checkouts of escalate too (e.g.
   `git archive 4fad3c6 | tar -x -C /tmp/old`), each round one process per tree, interleaved.
   Counted beside them (the load does not move these): the statements and hops a durable turn
   costs, and the Python calls a turn makes in memory and durable, in each checkout.
2. `escalate answer` in another process -> the waiting agent resumed: a run waits in
   `escalate run --wait`; the answer is written by a separate process; the time until the
   agent's next turn starts (its `decision` event), p50/p95 over K answers.
3. Random kills: half of them `escalate run`/`resume` killed with SIGKILL at random points and
   continued until done (tests/durable/crash_harness.py); half of them `escalate worker`s killed
   while runs park, while `escalate answer`'s decisions requeue them, while workers continue
   them and while a worker's poll applies an overdue default (tests/durable/park_harness.py);
   totals of results wrong, events and decisions lost or doubled, finished steps repeated,
   runs left pending. `--postgresql`: on a PostgreSQL server the benchmark starts.

Run: python tests/benchmarks/bench_durable.py [--turns N] [--rounds R] [--trees DIR ...] [--answers K] [--kills K] [--postgresql]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

from bench_runtime import FLOW  # noqa: E402  the same flow of N sequential agent calls


async def one_run(turns: int, folder: Path, durable: bool) -> float:
    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import RealClock
    from engine.lang.compiler import compile_source, workflow_class
    from engine.runtime.engine import CompiledWorkflow, Engine, RunStatus
    from engine.runtime.script import parse_script
    from rules.loader import default_rules

    clock = RealClock()
    script = parse_script("agents:\n  echo:\n" + "".join(f"    - 'reply {i}'\n" for i in range(turns)))
    cls = workflow_class(compile_source(FLOW.format(n=turns), Path("bench.sr")))
    workflow = CompiledWorkflow(folder / "bench.sr", "bench", cls)
    (folder / "bench.sr").write_text(FLOW.format(n=turns))
    db = host = None
    broker = EscalationBroker(clock)
    if durable:
        from engine.durable.database import Database
        from engine.durable.decisions import DecisionStore
        from engine.durable.host import DurableHost

        db = Database(f"sqlite:///{folder / 'bench.db'}")
        host = await DurableHost.open(db)
        broker.store = DecisionStore(db)
    engine = Engine(rules=default_rules(), broker=broker, clock=clock, script=script, workspace=folder, db=db, host=host)
    try:
        started = time.perf_counter()
        handle = engine.start_run(workflow, input="go")
        status = await handle.wait()
        elapsed = time.perf_counter() - started
        assert status is RunStatus.DONE, handle.error
        return elapsed / turns
    finally:
        if host is not None:
            host.close()


_BARE: list[Any] = []  # the bare workflow, registered with DBOS once per process


def _bare_workflow() -> Any:
    if not _BARE:
        from dbos import DBOS

        async def turn(i: int) -> list[dict[str, Any]]:
            return [{"content": {"parts": [{"text": f"reply {i}"}], "role": "model"}}]

        @DBOS.workflow(name="bench_bare_steps")
        async def bare_steps(n: int) -> None:
            for i in range(n):
                await DBOS.run_step_async({"name": "model turn", "retries_allowed": False}, turn, i)

        _BARE.append(bare_steps)
    return _BARE[0]


async def bare_step(turns: int, folder: Path, own_engine: bool) -> float:
    """A DBOS workflow of `turns` steps and nothing else, configured as escalate configures DBOS
    (JSON serializer), on escalate's engine for DBOS (`Database.dbos_engine`) or on DBOS's own."""
    from dbos import DBOS, SetWorkflowID

    from engine.durable.database import Database
    from engine.durable.serialization import serializer

    workflow = _bare_workflow()
    db = Database(f"sqlite:///{folder / 'bare.db'}")
    config: Any = {"name": "bench-bare", "system_database_url": db.url, "run_admin_server": False,
                   "log_level": "ERROR", "serializer": serializer()}
    if own_engine:
        config["system_database_engine"] = db.dbos_engine()
    DBOS(config=config)
    DBOS.launch()
    try:
        started = time.perf_counter()
        with SetWorkflowID(folder.name):
            handle = await DBOS.start_workflow_async(workflow, turns)
        await handle.get_result()
        return (time.perf_counter() - started) / turns
    finally:
        DBOS.destroy(workflow_completion_timeout_sec=0)
        db.close()


def statements_per_turn(turns: int) -> None:
    """SQL statements and commits a durable turn costs, by thread, and the hops from a thread
    (the loop's: MainThread) to a pool thread (counted: the host's load does not move them)."""
    import collections
    import re
    import threading

    import sqlalchemy as sa

    counts: collections.Counter[str] = collections.Counter()

    def thread() -> str:  # dbos-executor-3, queue-worker-escalate-HOST-PID-ID, Thread-4 (queue...): one name each
        return re.sub(r"(-escalate-.*| \(.*|_\d+|-\d+)$", "", threading.current_thread().name)

    def statement(conn: Any, cursor: Any, sql: str, *rest: Any) -> None:
        counts[f"{thread()}: {sql.split()[0]}"] += 1

    def commit(conn: Any) -> None:
        counts[f"{thread()}: COMMIT"] += 1

    def traced(sql: str) -> None:  # what SQLite itself runs: the PRAGMAs sent on the raw connection too
        if sql.startswith("PRAGMA busy_timeout"):
            counts[f"{thread()}: PRAGMA busy_timeout"] += 1

    def connected(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.set_trace_callback(traced)

    import concurrent.futures

    submit = concurrent.futures.ThreadPoolExecutor.submit

    def hop(pool: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:  # a hop: work handed to a thread, awaited back
        counts[f"{thread()}: hop to a pool thread"] += 1
        return submit(pool, fn, *args, **kwargs)

    import sqlite3

    class LoopWriterSqlite:  # sqlite3 as engine/durable/loop_write.py sees it: its statements counted
        def __getattr__(self, name: str) -> Any:
            return getattr(sqlite3, name)

        @staticmethod
        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = sqlite3.connect(*args, **kwargs)
            conn.set_trace_callback(lambda sql: counts.update([f"{thread()}, loop writer: {sql.split()[0]}"]))
            return conn

    try:
        from engine.durable import loop_write
    except ImportError:  # a checkout from before it
        loop_write = None
    if loop_write is not None:
        loop_write.sqlite3 = LoopWriterSqlite()
    concurrent.futures.ThreadPoolExecutor.submit = hop  # type: ignore[method-assign]
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", statement)
    sa.event.listen(sa.engine.Engine, "commit", commit)
    sa.event.listen(sa.engine.Engine, "connect", connected)
    try:
        asyncio.run(one_run(turns, Path(tempfile.mkdtemp()), True))
    finally:
        if loop_write is not None:
            loop_write.sqlite3 = sqlite3
        concurrent.futures.ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", statement)
        sa.event.remove(sa.engine.Engine, "commit", commit)
        sa.event.remove(sa.engine.Engine, "connect", connected)
    shown = ", ".join(f"{name} {n / turns:.2f}" for name, n in counts.most_common() if n >= turns / 20)
    print(f"statements and hops a durable turn, by thread ({turns} turns; open and close included): {shown}")


# One round in a checkout of escalate (its own bench_durable.one_run): [[wall, CPU of the process] s a
# turn, in memory and durable]. CPU counts every thread, a long run's minus a 10-turn run's (the
# open and DBOS's launch cancel out); the shared host moves it less than wall time.
_ROUND = """
import asyncio, json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, "tests/benchmarks")
import bench_durable as b
from engine.runtime.adk_setup import prepare_adk
prepare_adk()
asyncio.run(b.one_run(5, Path(tempfile.mkdtemp()), False))
asyncio.run(b.one_run(5, Path(tempfile.mkdtemp()), True))  # DBOS's imports and first launch, outside the figures
turns = int(sys.argv[1])

def timed(durable):
    def cpu_of(count):
        cpu = time.process_time()
        wall = asyncio.run(b.one_run(count, Path(tempfile.mkdtemp()), durable))
        return wall, time.process_time() - cpu

    wall, cpu = cpu_of(turns)
    return [wall, (cpu - cpu_of(10)[1]) / (turns - 10)]  # what a run pays once (DBOS's launch) cancels out

print(json.dumps([timed(False), timed(True)]))
"""


# Python function calls a turn (C functions included), in memory and durable: the difference
# between a run of 10 turns and one of 10 + N, over N. Counted, so the host's load does not move
# it; twice: on the threads that do a turn's work (the loop's, and the pool's that record steps
# and hop), and on every thread (the pollers' calls, a few hundred a turn, grow with the run's
# wall time, which the host's load moves).
_CALLS = """
import asyncio, collections, json, sys, tempfile, threading
from pathlib import Path
sys.path.insert(0, "tests/benchmarks")
import bench_durable as b
from engine.runtime.adk_setup import prepare_adk
prepare_adk()
turns = int(sys.argv[1])
count = collections.Counter()
names = {}

def counted(frame, event, arg):
    if event in ("call", "c_call"):
        count[threading.get_ident()] += 1

def calls(n, durable):
    count.clear()
    sys.setprofile(counted)
    threading.setprofile(counted)
    try:
        asyncio.run(b.one_run(n, Path(tempfile.mkdtemp()), durable))
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    names.update((t.ident, t.name) for t in threading.enumerate())
    turn = sum(n for ident, n in count.items()
               if names.get(ident, "").startswith(("MainThread", "dbos-executor", "asyncio")))
    return turn, sum(count.values())

out = []
for durable in (False, True):
    calls(5, durable)
    (big, big_all), (small, small_all) = calls(10 + turns, durable), calls(10, durable)
    out.append([(big - small) / turns, (big_all - small_all) / turns])
print(json.dumps(out))
"""


def calls_per_turn(turns: int, trees: list[Path]) -> None:
    """Python calls a turn, in memory and durable, in each checkout (a process each)."""
    for tree in [*trees, ROOT]:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        out = subprocess.run([sys.executable, "-c", _CALLS, str(turns)], cwd=tree, env=env, check=True,
                             capture_output=True, text=True).stdout
        (memory, memory_all), (durable, durable_all) = json.loads(out.strip().splitlines()[-1])
        name = "this checkout" if tree == ROOT else str(tree)
        print(f"Python calls a turn ({turns} turns), {name}, the loop's and the pool's threads: in memory "
              f"{memory:.0f}, durable {durable:.0f}; every thread: {memory_all:.0f}, {durable_all:.0f}")


def _round_in(tree: Path, turns: int) -> list[list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", _ROUND, str(turns)], cwd=tree, env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def turn_cost(turns: int, repeats: int = 5, trees: list[Path] | None = None) -> None:
    from engine.runtime.adk_setup import prepare_adk

    prepare_adk()
    figures: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        figures.setdefault(name, []).append(seconds * 1000)

    asyncio.run(one_run(5, Path(tempfile.mkdtemp()), False))  # imports and first-use costs
    for _ in range(repeats):
        for tree in [*(trees or []), ROOT]:  # each in a process of its own, this checkout too
            (memory, memory_cpu), (durable, durable_cpu) = _round_in(tree, turns)
            name = "this checkout" if tree == ROOT else str(tree)
            add(f"{name} in memory", memory)
            add(f"{name} durable", durable)
            add(f"{name} cost", durable - memory)
            add(f"{name} cost, CPU", durable_cpu - memory_cpu)
            add(f"{name} in memory, CPU", memory_cpu)  # the whole turn's, every thread of the process
            add(f"{name} durable, CPU", durable_cpu)
        add("bare DBOS step, escalate's engine", asyncio.run(bare_step(turns, Path(tempfile.mkdtemp()), True)))
        add("bare DBOS step, DBOS's own engine", asyncio.run(bare_step(turns, Path(tempfile.mkdtemp()), False)))
    statements_per_turn(turns)
    calls_per_turn(min(turns, 100), trees or [])
    load = os.getloadavg()[0]
    print(f"per agent turn ({turns} sequential calls, median of {repeats} rounds, load {load:.1f}): ms")
    for name, values in figures.items():
        print(f"  {name}: {statistics.median(values):.2f} (rounds: {', '.join(f'{v:.2f}' for v in values)})")


def answer_latency(answers: int) -> None:
    from engine.durable.database import Database

    folder = Path(tempfile.mkdtemp())
    sr = folder / "ask.sr"
    sr.write_text("prompt p: \"\"\"Ask.\"\"\"\nagent asker:\n    instruction p\nflow main:\n    $x = $input\n"
                  f"    loop max {answers} do\n        $x = run agent asker $x\n    end\n    return $x\n")
    replies = "".join("    - escalate: {reason: architecture_decision, question: 'Go on?', options: [{id: go, label: Go}]}\n"
                      "    - 'went on'\n" for _ in range(answers))
    (folder / "ask.yaml").write_text("agents:\n  asker:\n" + replies)
    db_url = f"sqlite:///{folder / 'escalate.db'}"
    events = folder / "events.jsonl"
    waiting = subprocess.Popen([sys.executable, "-m", "engine", "run", str(sr), "--script", str(folder / "ask.yaml"),
                                "--db", db_url, "--wait", "--events", str(events)], cwd=folder,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = Database(db_url)
    sent: dict[str, float] = {}
    try:
        deadline = time.monotonic() + 600
        while len(sent) < answers and time.monotonic() < deadline:
            rows = [r for r in db.pending_escalations() if r["id"] not in sent]
            if not rows:
                time.sleep(0.02)
                continue
            esc_id = rows[0]["id"]
            sent[esc_id] = time.time()
            subprocess.run([sys.executable, "-m", "engine", "answer", esc_id, "--option", "go", "--db", db_url],
                           cwd=folder, check=True, capture_output=True)
        waiting.wait(timeout=120)
    finally:
        waiting.kill()
        db.close()
    resumed: dict[str, float] = {}
    answered_at: dict[str, float] = {}
    for line in events.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "decision":
            from datetime import datetime

            resumed[event["id"]] = datetime.fromisoformat(event["time"]).timestamp()
    rows = {r["id"]: r for r in Database(db_url).escalations_of(next(iter(Database(db_url).list_runs(include_finished=True)))["run_id"])}
    for esc_id, row in rows.items():
        answered_at[esc_id] = row["decided_at"]
    lat = sorted((resumed[i] - answered_at[i]) * 1000 for i in resumed if i in answered_at)
    p95 = lat[max(0, int(len(lat) * 0.95) - 1)]
    print(f"escalate answer (another process) -> agent resumed, {len(lat)} answers: p50 {statistics.median(lat):.1f} ms, "
          f"p95 {p95:.1f} ms, max {lat[-1]:.1f} ms")


def kills(total: int, postgresql: bool = False) -> None:
    """`total` SIGKILLs, half on `escalate run`/`resume` (run_with_kills: 10 a run), half on
    `escalate worker`s while runs park, are requeued by `escalate answer`, are continued and get
    their deadlines' defaults (park_harness: 10 a round), rounds taken in turn. On a new SQLite
    file each, or (`postgresql`) a new database each on a PostgreSQL server started here."""
    from tests.durable.crash_harness import EXPECTED, run_with_kills
    from tests.durable.park_harness import kill_while_parking

    server = None
    if postgresql:
        from tests.pg_server import PostgresServer

        server = PostgresServer().start()
    rng = random.Random(12)
    runs = {"kills": 0, "runs": 0, "wrong results": 0, "decisions lost": 0, "decisions doubled": 0,
            "finished steps repeated": 0, "in-flight steps run again": 0}
    parks = {"kills": 0, "runs": 0, "wrong results": 0, "events lost": 0, "events doubled": 0,
             "decisions lost": 0, "decisions applied twice": 0, "defaults early": 0, "finished steps repeated": 0,
             "left pending": 0, "worker faults": 0, "in-flight steps run again": 0, "answers": 0,
             "answer processes killed": 0, "answers failed": 0, "defaults applied": 0, "defaults due with no worker": 0,
             "audits after a kill": 0}
    points: dict[str, int] = {}
    problems: list[str] = []
    started = time.monotonic()
    half = total - total // 2

    def line() -> str:
        kind = "PostgreSQL" if postgresql else "SQLite"
        return (f"{kind}, {time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f}\n"
                f"    run/resume: {', '.join(f'{k} {v}' for k, v in runs.items())}\n"
                f"    workers, parking: {', '.join(f'{k} {v}' for k, v in parks.items())}\n"
                f"    kills at: {', '.join(f'{k} {v}' for k, v in sorted(points.items()))}")

    try:
        while runs["kills"] < half or parks["kills"] < total - half:
            url = server.new_database() if server is not None else None
            if runs["kills"] < half and runs["kills"] <= parks["kills"]:
                report = run_with_kills(Path(tempfile.mkdtemp()), kills=min(10, half - runs["kills"]), rng=rng, db_url=url)
                runs["kills"] += report.kills
                runs["runs"] += 1
                runs["wrong results"] += report.result != EXPECTED
                runs["decisions lost"] += report.decisions_missing + max(0, 3 - report.escalations)
                runs["decisions doubled"] += report.decision_events_doubled
                runs["finished steps repeated"] += report.steps_repeated
                runs["in-flight steps run again"] += report.steps_in_flight_rerun
                if report.result != EXPECTED or report.decisions_missing or report.steps_repeated:
                    problems.append(f"run/resume: {report}")
            else:
                park = kill_while_parking(Path(tempfile.mkdtemp()), rng, runs=4, kills=min(10, total - half - parks["kills"]),
                                          concurrency=rng.choice([1, 2]), db_url=url)
                for name, value in (("kills", park.kills), ("runs", park.runs), ("wrong results", park.wrong_results),
                                    ("events lost", park.events_lost), ("events doubled", park.events_doubled),
                                    ("decisions lost", park.decisions_lost),
                                    ("decisions applied twice", park.decisions_doubled),
                                    ("defaults early", park.defaults_early),
                                    ("finished steps repeated", park.steps_repeated), ("left pending", park.left_pending),
                                    ("worker faults", park.worker_faults),
                                    ("in-flight steps run again", park.steps_in_flight_rerun), ("answers", park.answers),
                                    ("answer processes killed", park.answers_killed),
                                    ("answers failed", park.answers_failed), ("defaults applied", park.defaults),
                                    ("defaults due with no worker", park.defaults_with_no_worker),
                                    ("audits after a kill", park.checks)):
                    parks[name] += value
                for point, n in park.kill_points.items():
                    points[point] = points.get(point, 0) + n
                problems.extend(park.problems)
            print(line(), flush=True)
            for problem in problems:
                print("    PROBLEM", problem[:3000], flush=True)
            problems.clear()
    finally:
        if server is not None:
            server.stop()
    print("random kills:", line())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--trees", type=Path, nargs="*", default=[], help="other checkouts of escalate, run side by side")
    parser.add_argument("--answers", type=int, default=40)
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--postgresql", action="store_true", help="the kills on a PostgreSQL server started here")
    parser.add_argument("--statements-only", action="store_true", help="only the statements a durable turn costs")
    args = parser.parse_args()
    os.chdir(ROOT)
    if args.statements_only:
        from engine.runtime.adk_setup import prepare_adk

        prepare_adk()
        statements_per_turn(args.turns)
        calls_per_turn(min(args.turns, 100), [tree.resolve() for tree in args.trees])
    elif args.turns:
        turn_cost(args.turns, args.rounds, [tree.resolve() for tree in args.trees])
    if args.answers and not args.statements_only:
        answer_latency(args.answers)
    if args.kills and not args.statements_only:
        kills(args.kills, args.postgresql)
