"""escalate and LangGraph side by side (issue 26): the same agent loop on both, interleaved round
by round in one run, both durable on a SQLite file, a scripted model on both (no network, no real
model). Prints the load, then one table: median (p95, rounds) of each figure and the ratio
escalate / LangGraph. Asserts nothing.

The workload: 10 model turns, the first of which asks a person to approve ("Go on?", option
`go`). escalate: a real `.sr` workflow (an agent called in a loop; its scripted first reply is an
escalation) through the real engine and CLI (peer_escalate.py: what runs inside one process).
LangGraph: peer_langgraph.py, a StateGraph whose node calls a scripted model function,
`interrupt()` for the approval, `Command(resume=...)` to answer it, SqliteSaver with
`durability="sync"` (`--saver async`: AsyncSqliteSaver).

Figures (fresh processes for everything a user starts from a shell):
- per turn, durable minus in memory, same round, and a durable turn whole stack (an N-turn
  loop with no approval, in one process; bench_durable.py's run for escalate): wall time, and
  CPU time of the process (a long run's minus a 5-turn run's, per turn: steadier on a busy host);
- cold start: command launched -> first turn done, the run waiting at its approval
  (`escalate run`, exit 4, vs `python peer_langgraph.py start`), and the command's CPU time;
- answer from the shell -> next turn done, no process waiting (`escalate answer` then `escalate
  resume` vs a fresh LangGraph process resuming the thread), and the commands' CPU time;
- answer from another process -> the run resumed: from `escalate answer` launched to the next
  turn in the `run --wait` process holding the run, against a fresh LangGraph process resuming
  the thread (a LangGraph run waits in no process); and from the decision written to that next
  turn, against a LangGraph process that holds the thread, reads the answer and resumes it.
  escalate twice: answered at once (the run a live coroutine) and once the run has parked in
  its `run --wait` process (ESCALATE_PARK_LIVE_AFTER=1: claimed back, replayed);
- process memory, idle: those two processes holding one run at its approval (RSS), and the CPU
  they spend a second meanwhile (their polls);
- N runs brought to their approval in one process, two ways, each against LangGraph's like:
  one after another (escalate starts each run once the one before waits at its approval;
  LangGraph's SqliteSaver, a loop of `invoke`) and all at once (escalate's burst; LangGraph's
  AsyncSqliteSaver and asyncio.gather): the time (and the process's CPU time over it, all
  threads; escalate's also until all have parked), and memory per waiting run (RSS delta / N
  after a collection; and of it, the bytes Python's small-object allocator holds in live
  blocks: what the runs keep, apart from the free memory they leave in the allocators; and
  objects per run, gc.get_objects delta / N), the same way on both sides. escalate settled
  (every run parked in its process past the bound: what a waiting run costs for as long as it
  waits) and, all at once, at its approval before the bound (a process of its own with
  ESCALATE_PARK_LIVE_AFTER at a day and no bound on the runs held live: each a live coroutine);
- with `--worker-runs N`: N runs queued for one `escalate worker --concurrency 8`: how many reach
  their approval (all, once a waiting run leaves its worker place: then their time and answer
  from the shell -> next turn in the worker), the worker's memory idle and per waiting run.

Run (LangGraph is an optional extra: `pip install -e '.[bench]'`):
    python tests/benchmarks/bench_peer.py [--rounds 5] [--turns 200] [--many 200] [--many-rounds 3]
        [--worker-runs 200] [--saver sync|async] [--escalate-src DIR]
The start-up figures alone (cold start, answer from the shell, the live answer, idle memory):
    --turns 0 --many-rounds 0 --worker-runs 0
`--escalate-src DIR`: the escalate tree measured (its PYTHONPATH; default: the `engine` this
Python imports), so an older checkout can be measured against the same LangGraph.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from peer_escalate import event_time, write_workload
from peer_langgraph import rss_kb

HERE = Path(__file__).resolve().parent
LANGGRAPH = HERE / "peer_langgraph.py"
ESCALATE = HERE / "peer_escalate.py"
INSTALL = "LangGraph is not installed: pip install -e '.[bench]' (langgraph and langgraph-checkpoint-sqlite, for this benchmark only)"

# -- the parent: processes of both sides, interleaved ---------------------------------------------


class Sides:
    """How to start a process of each side: escalate with PYTHONPATH=<its tree>, LangGraph plain."""

    def __init__(self, src: Path, saver: str, work: Path) -> None:
        self.src, self.saver, self.work = src, saver, work
        # Compiled bytecode kept, as a user's Python does after its first start: these machines set
        # PYTHONDONTWRITEBYTECODE, and every escalate launch compiled its sources again (LangGraph
        # came compiled by pip). The untimed first run writes it.
        plain = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.escalate_env = {**plain, "PYTHONPATH": str(src)}
        self.peer_env = {**plain, "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
        self.db_url = f"sqlite:///{work / 'escalate.db'}"
        self.peer_db = str(work / "langgraph.db")
        self.source, self.script = write_workload(work)

    def escalate(self, *args: str, events: Path | None = None, wait: bool = True, env: dict[str, str] | None = None) -> Any:
        command = [sys.executable, "-m", "engine", *args, "--db", self.db_url]
        if events is not None:
            command += ["--events", str(events)]
        env = {**self.escalate_env, **(env or {})}
        if not wait:
            return subprocess.Popen(command, cwd=self.work, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return subprocess.run(command, cwd=self.work, env=env, capture_output=True, text=True)

    def parked(self, run_id: str, timeout: float = 60.0) -> bool:
        """Wait until the run's row says parked (its process ended its execution); False after
        `timeout` (a tree that never parks a live run)."""
        import sqlite3

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with sqlite3.connect(self.work / "escalate.db", timeout=30) as conn:
                found = conn.execute("SELECT status FROM escalate_runs WHERE run_id = ?", (run_id,)).fetchone()
            if found is not None and found[0] == "parked":
                return True
            time.sleep(0.02)
        return False

    def escalate_child(self, *args: str) -> Any:
        return json_line(subprocess.run([sys.executable, str(ESCALATE), args[0], str(self.src), *args[1:]],
                                        cwd=self.work, env=self.escalate_env, capture_output=True, text=True))

    def peer(self, *args: str) -> Any:
        return json_line(subprocess.run([sys.executable, str(LANGGRAPH), *args], cwd=self.work, env=self.peer_env,
                                        capture_output=True, text=True))


def json_line(proc: subprocess.CompletedProcess[str]) -> Any:
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{' '.join(map(str, proc.args[:4]))}... exited {proc.returncode}: {tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def events_after(path: Path, type_: str, since: float, timeout: float = 300) -> dict[str, Any]:
    """The first event of `type_` at or after `since` (epoch s) in a run's events file, waiting for
    it (a resumed run writes its earlier events again, with their own times)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line being written
                if event["type"] == type_ and event_time(event) >= since - 0.001:  # the times have ms
                    return event
        time.sleep(0.005)
    raise SystemExit(f"{path}: no {type_} event within {timeout:g} s")


IDLE_CPU_SECONDS = 5.0  # how long a process holding a waiting run is watched, idle


def idle_cpu(pid: int) -> float:
    """CPU milliseconds a second that process `pid` spends while it only waits (its polls)."""
    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    before, started = cpu(), time.monotonic()
    time.sleep(IDLE_CPU_SECONDS)
    return (cpu() - before) * 1000 / (time.monotonic() - started)


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: around one command run at
    a time, that command's CPU, start-up and exit included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Figures:
    def __init__(self) -> None:
        self.samples: dict[tuple[str, str], list[float]] = {}
        # escalation id -> (figure, its run's next turn done) (`run --wait`)
        self.next_turns: dict[str, tuple[str, float]] = {}

    def add(self, figure: str, side: str, value: float) -> None:
        self.samples.setdefault((figure, side), []).append(value)

    def get(self, figure: str, side: str) -> list[float]:
        return self.samples.get((figure, side), [])


def escalate_cold_and_shell(sides: Sides, figures: Figures, round_: int) -> None:
    """`escalate run` to the approval (exit 4: nobody answers), then `answer` + `resume`."""
    events = sides.work / f"cold-{round_}.jsonl"
    cpu, launched = children_cpu(), time.time()
    proc = sides.escalate("run", str(sides.source), "--script", str(sides.script), "--input", "go", events=events)
    figures.add("cold_cpu", "escalate", children_cpu() - cpu)
    if proc.returncode != 4:
        raise SystemExit(f"escalate run exited {proc.returncode}, not 4 (waiting): {proc.stderr.strip()[-300:]}")
    asked = events_after(events, "human_escalation", launched, timeout=1)
    figures.add("cold", "escalate", event_time(asked) - launched)
    esc_id = asked["id"]
    cpu, answered = children_cpu(), time.time()
    decided = sides.escalate("answer", esc_id, "--option", "go")
    if decided.returncode != 0:
        raise SystemExit(f"escalate answer exited {decided.returncode}: {decided.stderr.strip()[-300:]}")
    resumed_events = sides.work / f"resume-{round_}.jsonl"
    resumed = sides.escalate("resume", esc_id.split(".")[0], events=resumed_events)
    if resumed.returncode != 0:
        raise SystemExit(f"escalate resume exited {resumed.returncode}: {resumed.stderr.strip()[-300:]}")
    figures.add("shell_cpu", "escalate", children_cpu() - cpu)
    figures.add("shell", "escalate", event_time(events_after(resumed_events, "agent_result", answered, 1)) - answered)


def peer_cold_and_shell(sides: Sides, figures: Figures, round_: int) -> None:
    thread = f"round-{round_}"
    cpu, launched = children_cpu(), time.time()
    started = sides.peer("start", sides.saver, sides.peer_db, thread)
    figures.add("cold_cpu", "langgraph", children_cpu() - cpu)
    figures.add("cold", "langgraph", started["waiting"] - launched)
    cpu, answered = children_cpu(), time.time()
    resumed = sides.peer("resume", sides.saver, sides.peer_db, thread)
    figures.add("shell_cpu", "langgraph", children_cpu() - cpu)
    figures.add("shell", "langgraph", resumed["next_turn"] - answered)


PARK_SOON = {"ESCALATE_PARK_LIVE_AFTER": "1"}  # the parked rows: the run parks in its process 1 s after it asks


def escalate_live(sides: Sides, figures: Figures, round_: int) -> None:
    """A run waiting in `run --wait`; `escalate answer` from another process; its next turn. Three
    times: answered at once (the run a live coroutine: the answer reaches its agent in-process);
    watched idle for a while (the tree's defaults: what a `run --wait` costs while a person takes
    their time), then answered (not counted); and parked in that process first
    (ESCALATE_PARK_LIVE_AFTER=1: rows only, claimed back and replayed there)."""
    for mode in ("live", "idle", "parked"):
        events = sides.work / f"live-{round_}-{mode}.jsonl"
        launched = time.time()
        proc = sides.escalate("run", str(sides.source), "--script", str(sides.script), "--input", "go", "--wait",
                              events=events, wait=False, env=PARK_SOON if mode == "parked" else None)
        try:
            asked = events_after(events, "human_escalation", launched)
            if mode == "idle":
                time.sleep(0.5)  # settled: what it holds while it waits
                figures.add("idle", "escalate", rss_kb(proc.pid) / 1024)
                figures.add("idle_cpu", "escalate", idle_cpu(proc.pid))
            if mode == "parked" and not sides.parked(asked["id"].rsplit(".", 1)[0]):
                print("  escalate: the run did not park in its `run --wait` process (a tree without live parking)")
                mode = "live"
            answered = time.time()
            decided = sides.escalate("answer", asked["id"], "--option", "go")
            if decided.returncode != 0:
                raise SystemExit(f"escalate answer exited {decided.returncode}: {decided.stderr.strip()[-300:]}")
            next_turn = event_time(events_after(events, "agent_result", answered))
            if mode != "idle":
                key = "live-parked" if mode == "parked" else "live"
                figures.add(key, "escalate", next_turn - answered)
                figures.next_turns[asked["id"]] = (key + "-decided", next_turn)
            if proc.wait(timeout=300) != 0:
                raise SystemExit(f"escalate run --wait exited {proc.returncode}: {proc.stderr.read()[-300:] if proc.stderr else ''}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def peer_live(sides: Sides, figures: Figures, round_: int) -> None:
    """A LangGraph process holding its thread at the approval, answered by a line on its stdin:
    the process that has the answer resumes the thread itself."""
    proc = subprocess.Popen([sys.executable, str(LANGGRAPH), "live", sides.saver, sides.peer_db, f"live-{round_}"],
                            cwd=sides.work, env=sides.peer_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        if not proc.stdout.readline():
            raise SystemExit(f"peer_langgraph.py live failed: {proc.stderr.read()[-300:] if proc.stderr else ''}")
        time.sleep(0.5)  # settled, as escalate's is
        figures.add("idle", "langgraph", rss_kb(proc.pid) / 1024)
        figures.add("idle_cpu", "langgraph", idle_cpu(proc.pid))
        proc.stdin.write("go\n")
        proc.stdin.close()
        times = json.loads(proc.stdout.readline())
        figures.add("live-decided", "langgraph", times["next_turn"] - times["answered"])
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# The N-run figures in two modes, each against LangGraph's like: one after another (escalate starts
# each run once the one before waits at its approval; LangGraph's SqliteSaver loop of `invoke`s)
# and all at once (escalate's burst; LangGraph's AsyncSqliteSaver and asyncio.gather).
MANY_MODES = {"sequential": ("sequential", "sync"), "burst": ("parked", "async")}


def many(sides: Sides, figures: Figures, count: int, round_: int, escalate_first: bool) -> None:
    def record(side: str, key: str, result: dict[str, Any]) -> None:
        figures.add("per-run" + key, side, result["rss_delta_kb"] / count)
        figures.add("per-run-objects" + key, side, result["objects_delta_kb"] / count)
        if "objects" in result:
            figures.add("per-run-count" + key, side, result["objects"] / count)

    def escalate() -> None:
        # settled (each parked in its process) one after another and all at once, then all at once held live
        for key, state in (("-sequential", "sequential"), ("", "parked"), ("-approval", "approval")):
            folder = Path(tempfile.mkdtemp(dir=sides.work))
            result = sides.escalate_child("many", str(count), str(folder), state)
            if result["waiting"] < count:
                raise SystemExit(f"escalate ({state}): only {result['waiting']} of {count} runs reached their approval")
            if state != "approval":
                figures.add("many" + key, "escalate", result["seconds"])
                figures.add("many_cpu" + key, "escalate", result["cpu"])
                figures.add("parked" + key, "escalate", result.get("parked", 0))
                if "settled_cpu" in result:
                    figures.add("settled_cpu" + key, "escalate", result["settled_cpu"])
            record("escalate", key, result)

    def peer() -> None:
        for key, saver in (("-sequential", "sync"), ("", "async")):
            result = sides.peer("many", saver, str(count), str(sides.work / f"many-{round_}-{saver}.db"))
            figures.add("many" + key, "langgraph", result["seconds"])
            figures.add("many_cpu" + key, "langgraph", result["cpu"])
            record("langgraph", key, result)

    for side in (escalate, peer) if escalate_first else (peer, escalate):
        side()


def turns(sides: Sides, figures: Figures, count: int, escalate_first: bool) -> None:
    def escalate() -> None:
        add("escalate", sides.escalate_child("turns", str(count)), "durable")

    def peer() -> None:
        result = sides.peer("turns", str(count))
        add("langgraph", result, f"durable_{sides.saver}")
        other = "async" if sides.saver == "sync" else "sync"
        figures.add("turn-other", "langgraph", result[f"durable_{other}"] * 1000)

    def add(side: str, result: dict[str, float], durable: str) -> None:
        for suffix in ("", "_cpu"):
            figures.add(f"turn{suffix}", side, result[durable + suffix] * 1000)
            figures.add(f"durability{suffix}", side, (result[durable + suffix] - result["memory" + suffix]) * 1000)

    for side in (escalate, peer) if escalate_first else (peer, escalate):
        side()


def worker_rows(sides: Sides, count: int, answers: int) -> list[str]:
    """`count` runs queued for one worker with 8 places: how many reach their approval (all, once a
    waiting run leaves its place and only rows), the worker's memory, and when all do, `answers`
    of them answered from the shell -> their next turn in the worker."""
    db = f"sqlite:///{Path(tempfile.mkdtemp(dir=sides.work)) / 'worker.db'}"
    worker = subprocess.Popen([sys.executable, "-m", "engine", "worker", "--db", db, "--concurrency", "8"],
                              cwd=sides.work, env=sides.escalate_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    try:
        time.sleep(8)  # started, idle
        if worker.poll() is not None:
            raise SystemExit(f"escalate worker exited {worker.returncode}: {worker.stderr.read()[-300:] if worker.stderr else ''}")
        idle = rss_kb(worker.pid)
        folder = str(Path(tempfile.mkdtemp(dir=sides.work)))
        sides.escalate_child("queue", "1", folder, db)  # one run first: the worker's first-use costs
        sides.escalate_child("watch", db, "1", "60")
        warm = rss_kb(worker.pid)
        queued = sides.escalate_child("queue", str(count), folder, db)
        watched = sides.escalate_child("watch", db, str(count + 1), "15")
        held = rss_kb(worker.pid)
        waiting = int(watched["waiting"]) - 1
        latencies = []
        if waiting >= count:
            for esc_id in watched["ids"][:answers]:
                answered = time.time()
                decided = subprocess.run([sys.executable, "-m", "engine", "answer", esc_id, "--option", "go", "--db", db],
                                         cwd=sides.work, env=sides.escalate_env, capture_output=True, text=True)
                if decided.returncode != 0:
                    raise SystemExit(f"escalate answer exited {decided.returncode}: {decided.stderr.strip()[-300:]}")
                next_turn = sides.escalate_child("next", db, esc_id.split(".")[0], repr(answered))["next_turn"]
                latencies.append(next_turn - answered)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    title = f"{count} runs queued for one `escalate worker --concurrency 8`"
    lines = [f"| process memory, idle: `escalate worker` | {idle / 1024:.0f} MiB | | |"]
    if waiting < count:
        lines.append(f"| {title} | {waiting} of {count} reached their approval: a waiting run holds a worker "
                     "place (rows only: not supported) | | |")
    else:
        lines.append(f"| {title}: all at their approval | {watched['last'] - queued['started']:.1f} s | | |")
        lines.append(row("answer from the shell -> next turn, the run only rows, a worker running", latencies, [], "s"))
    if waiting:
        lines.append(f"| memory per waiting run in that worker ({waiting} waiting, RSS delta / N after a first run) | "
                     f"{(held - warm) / waiting:.0f} KB | | |")
    return lines


def summary(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def cell(values: list[float], unit: str, digits: int) -> str:
    if not values:
        return "not measured"
    median, p95 = summary(values)
    return f"{median:.{digits}f} {unit} (p95 {p95:.{digits}f}, n={len(values)})"


def row(name: str, ours: list[float], theirs: list[float], unit: str, *, scale: float = 1.0, digits: int = 2) -> str:
    ours, theirs = [v * scale for v in ours], [v * scale for v in theirs]
    # no ratio to a figure at or below zero (LangGraph's objects after its runs: none kept)
    ratio = f"{statistics.median(ours) / statistics.median(theirs):.1f}x" if ours and theirs and statistics.median(theirs) > 0 else ""
    return f"| {name} | {cell(ours, unit, digits)} | {cell(theirs, unit, digits)} | {ratio} |"


def table(figures: Figures, args: argparse.Namespace) -> list[str]:
    def both(key: str) -> tuple[list[float], list[float]]:
        return figures.get(key, "escalate"), figures.get(key, "langgraph")

    fresh_resume = figures.get("shell", "langgraph")  # LangGraph's answer from another process: it resumes the thread
    other = "AsyncSqliteSaver" if args.saver == "sync" else "SqliteSaver"
    return [
        "| figure | escalate | LangGraph | ratio |",
        "| --- | --- | --- | --- |",
        row(f"durability cost per turn (durable minus in memory, same round, {args.turns} turns)", *both("durability"), "ms"),
        row("a durable turn, whole stack", *both("turn"), "ms"),
        row(f"a durable turn, LangGraph with {other}", [], figures.get("turn-other", "langgraph"), "ms"),
        row("durability cost per turn in CPU time (all threads; a long run minus a short one)",
            *both("durability_cpu"), "ms"),
        row("a durable turn in CPU time", *both("turn_cpu"), "ms"),
        row("cold start: command launched -> first turn done, waiting at the approval", *both("cold"), "s"),
        row("  the same command in CPU time, start-up and exit included", *both("cold_cpu"), "s"),
        row("answer from the shell -> next turn, no process waiting (`answer` + `resume` / a fresh process)",
            *both("shell"), "s"),
        row("  the same commands in CPU time, to their exit (the run's 9 other turns too)", *both("shell_cpu"), "s"),
        row("answer from another process -> the run resumed (escalate: `answer` launched -> next turn in the "
            "`run --wait` process holding it; LangGraph: a fresh process resumes the thread)",
            figures.get("live", "escalate"), fresh_resume, "ms", scale=1000, digits=0),
        row("  the same once the run has parked in its `run --wait` process (rows only: claimed back and replayed "
            "there; LangGraph: a fresh process resumes the thread)",
            figures.get("live-parked", "escalate"), fresh_resume, "ms", scale=1000, digits=0),
        row("answer given -> next turn, the run held by a live process (escalate: decision written by `answer` -> "
            "`run --wait`'s next turn; LangGraph: the holding process reads the answer and resumes)",
            *both("live-decided"), "ms", scale=1000, digits=1),
        row("  the same once the run has parked in its `run --wait` process", figures.get("live-parked-decided", "escalate"),
            figures.get("live-decided", "langgraph"), "ms", scale=1000, digits=1),
        *many_rows(figures, args.many),
        row("process memory, idle (holding one run at its approval: `run --wait` / a LangGraph process)",
            *both("idle"), "MiB", digits=0),
        row(f"  its CPU while it waits ({IDLE_CPU_SECONDS:g} s watched)", *both("idle_cpu"), "ms/s", digits=1),
    ]


def many_rows(figures: Figures, count: int) -> list[str]:
    """The N-run rows, each mode against LangGraph's like (MANY_MODES)."""
    def both(key: str) -> tuple[list[float], list[float]]:
        return figures.get(key, "escalate"), figures.get(key, "langgraph")

    lines = []
    for key, mode, peer in (("-sequential", "one after another", "SqliteSaver, a loop of `invoke`"),
                            ("", "all at once", "AsyncSqliteSaver, asyncio.gather")):
        lines += [
            row(f"time to bring {count} runs to their approval, one process, {mode} (LangGraph: {peer})",
                *both("many" + key), "s", digits=2),
            row(f"  the same in CPU time (all threads of the process), {mode}", *both("many_cpu" + key), "s", digits=2),
            row(f"  escalate's CPU until all {count} have parked (their parks' work too, wherever the parking "
                f"bound put it; LangGraph: its runs end at their interrupt), {mode}",
                figures.get("settled_cpu" + key, "escalate"), figures.get("many_cpu" + key, "langgraph"), "s", digits=2),
            row(f"memory per waiting run, {count} runs in a live process, {mode}, settled: each parked there "
                f"(escalate: {parked_note(figures, count, key)}; RSS delta / N after a collection)",
                *both("per-run" + key), "KB", digits=0),
            row(f"  of it, Python objects, {mode} (pymalloc's bytes in live blocks, delta / N; the rest: free space "
                "the runs left in the allocators, threads, SQLite's page cache: bench_run_memory.py)",
                *both("per-run-objects" + key), "KB", digits=1),
            row(f"  objects per run, {mode} (gc.get_objects delta / N)", *both("per-run-count" + key), "", digits=1),
        ]
    return lines + [
        row("memory per waiting run, all at once, at its approval, before the parking bound (each a live coroutine; "
            "RSS delta / N; LangGraph: AsyncSqliteSaver, asyncio.gather)",
            figures.get("per-run-approval", "escalate"), figures.get("per-run", "langgraph"), "KB", digits=0),
        row("  of it, Python objects (pymalloc, delta / N)", figures.get("per-run-objects-approval", "escalate"),
            figures.get("per-run-objects", "langgraph"), "KB", digits=1),
        row("  objects per run (gc.get_objects delta / N)", figures.get("per-run-count-approval", "escalate"),
            figures.get("per-run-count", "langgraph"), "", digits=1),
    ]


def parked_note(figures: Figures, count: int, key: str) -> str:
    parked = figures.get("parked" + key, "escalate")
    if not parked:
        return "not measured"
    return f"{min(parked):.0f}-{max(parked):.0f} of {count} parked when measured"


def escalate_source(given: str | None) -> Path:
    if given:
        path = Path(given).resolve()
        if not (path / "engine" / "__init__.py").is_file():
            raise SystemExit(f"--escalate-src {given}: no engine/ package there")
        return path
    spec = importlib.util.find_spec("engine")
    if spec is None or spec.origin is None:
        raise SystemExit("escalate is not importable: install it or give --escalate-src DIR")
    return Path(spec.origin).resolve().parents[1]


def describe(src: Path) -> str:
    commit = subprocess.run(["git", "-C", str(src), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return f"{src} ({commit.stdout.strip()[:70] or 'not a git checkout'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the per-turn and process figures")
    parser.add_argument("--turns", type=int, default=200, help="turns of the per-turn loop (0: skip those figures)")
    parser.add_argument("--many", type=int, default=200, help="runs brought to their approval in one process")
    parser.add_argument("--many-rounds", type=int, default=3)
    parser.add_argument("--worker-runs", type=int, default=200,
                        help="runs queued for one worker of 8 places (more than 7: it tells whether they all wait; 0: skip)")
    parser.add_argument("--saver", choices=("sync", "async"), default="sync",
                        help="LangGraph's SqliteSaver (sync) or AsyncSqliteSaver (async)")
    parser.add_argument("--escalate-src", help="the escalate tree to measure (its PYTHONPATH)")
    args = parser.parse_args()
    if 0 < args.worker_runs < 8:
        parser.error("--worker-runs: 0, or more than 7 (the worker's 8 places, one taken by a first run)")
    try:
        installed = importlib.util.find_spec("langgraph.checkpoint.sqlite") is not None
    except ModuleNotFoundError:  # langgraph itself is missing
        installed = False
    if not installed:
        raise SystemExit(INSTALL)
    from importlib.metadata import version

    src = escalate_source(args.escalate_src)
    print(f"escalate: {describe(src)}")
    print(f"LangGraph {version('langgraph')}, langgraph-checkpoint-sqlite {version('langgraph-checkpoint-sqlite')}, "
          f"{'SqliteSaver' if args.saver == 'sync' else 'AsyncSqliteSaver'}, durability='sync'")
    load_before = os.getloadavg()
    print(f"load average at start {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f} "
          f"({os.cpu_count()} CPUs)", flush=True)
    figures = Figures()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as folder:
        sides = Sides(src, args.saver, Path(folder))
        # the databases exist before the first timed launch, as they do after a user's first run
        sides.escalate("run", str(sides.source), "--script", str(sides.script), "--input", "go")
        sides.peer("start", sides.saver, sides.peer_db, "first")
        for round_ in range(args.rounds):
            first = round_ % 2 == 0  # who goes first alternates
            for step in ((escalate_cold_and_shell, peer_cold_and_shell) if first
                         else (peer_cold_and_shell, escalate_cold_and_shell)):
                step(sides, figures, round_)
            for step in ((escalate_live, peer_live) if first else (peer_live, escalate_live)):
                step(sides, figures, round_)
            if args.turns:
                turns(sides, figures, args.turns, first)
            print(f"  round {round_ + 1}/{args.rounds} done ({time.monotonic() - started:.0f} s, "
                  f"load {os.getloadavg()[0]:.1f})", flush=True)
        for esc_id, decided_at in sides.escalate_child("decided", sides.db_url).items():
            if esc_id in figures.next_turns:
                key, next_turn = figures.next_turns[esc_id]
                figures.add(key, "escalate", next_turn - decided_at)
        for round_ in range(args.many_rounds):
            many(sides, figures, args.many, round_, round_ % 2 == 0)
            print(f"  {args.many} runs, round {round_ + 1}/{args.many_rounds} done ({time.monotonic() - started:.0f} s, "
                  f"load {os.getloadavg()[0]:.1f})", flush=True)
        extra = worker_rows(sides, args.worker_runs, args.rounds) if args.worker_runs else []
    print()
    for line in table(figures, args) + extra:
        print(line)
    load_after = os.getloadavg()
    print(f"\nload average at the end {load_after[0]:.1f} {load_after[1]:.1f} {load_after[2]:.1f}; "
          f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
