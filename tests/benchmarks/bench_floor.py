"""The floor under issue 26's start-up figures: what the libraries escalate must use (Google ADK
for agents, DBOS Transact for durable state: the product's specification) cost by themselves,
measured beside escalate and LangGraph in one run, interleaved round by round, each a fresh
process. Prints a table; asserts nothing.

Rows (each side a fresh process; the medians of the rounds, p95 in brackets):
- launch -> first model turn done, and the command's CPU time to its exit, and its RSS then:
  LangGraph with SqliteSaver to its approval (peer_langgraph.py start: the peer, durable);
  ADK alone, one turn in memory (floor_stack.py adk: no escalate, no durability);
  ADK after DBOS's launch on a SQLite file (floor_stack.py adk-dbos: the stack escalate is
  specified on, with none of escalate's code); `escalate run` to its approval (exit 4; its RSS
  from a `run --wait` of the same flow, waiting at the approval);
- answer from the shell -> next turn with no process waiting: `escalate answer` + `escalate
  resume` against a fresh LangGraph process resuming the thread. Its floor is the ADK + DBOS row:
  a process that continues a run must import both and make a turn.
- a turn's CPU (a long loop's minus a short one's, in one warmed-up process; `--turns`):
  LangGraph in memory and durable (SqliteSaver); ADK's bare agent, and the same agent shaped as
  escalate's (floor_stack.py turns: a long-running tool, two model callbacks, a reply with its
  token usage), in memory; escalate in memory and durable (bench_durable.py's run).
- N runs brought to their approval one after another in one process (`--runs`): the CPU a run
  (escalate: until each has parked, its execution ended) and the RSS a run leaves (after a
  collection): LangGraph with SqliteSaver (its `invoke` loop); the shaped agent's turn alone, in
  memory; the same turn as a DBOS step of a DBOS workflow a run (floor_stack.py runs: what
  DBOS Transact costs a run by itself); escalate (bench_peer.py's `sequential` runs).

Run (LangGraph is an optional extra: `pip install -e '.[bench]'`):
    python tests/benchmarks/bench_floor.py [--rounds 5] [--turns 200] [--runs 200] [--escalate-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_peer import Figures, Sides, cell, children_cpu, escalate_cold_and_shell, escalate_source, events_after, \
    json_line, peer_cold_and_shell, summary
from peer_langgraph import rss_kb

HERE = Path(__file__).resolve().parent
FLOOR = HERE / "floor_stack.py"


def floor(sides: Sides, figures: Figures, mode: str) -> None:
    """One fresh process of the bare stack: imports, (DBOS's launch,) one ADK turn, exit."""
    cpu, launched = children_cpu(), time.time()
    done = json_line(subprocess.run([sys.executable, str(FLOOR), mode, str(sides.work / "floor.db")],
                                    cwd=sides.work, env=sides.peer_env, capture_output=True, text=True))
    figures.add("cpu", mode, children_cpu() - cpu)
    figures.add("cold", mode, done["done"] - launched)
    figures.add("rss", mode, done["rss_kb"] / 1024)


def turns(sides: Sides, figures: Figures, count: int) -> None:
    """A turn's CPU, ms, on each side, each a fresh process."""
    peer_turns = sides.peer("turns", str(count))
    ours = sides.escalate_child("turns", str(count))
    floors = json_line(subprocess.run([sys.executable, str(FLOOR), "turns", str(count)], cwd=sides.work,
                                      env=sides.peer_env, capture_output=True, text=True))
    for key, value in (("langgraph-memory", peer_turns["memory_cpu"] * 1000),
                       ("langgraph-durable", peer_turns["durable_sync_cpu"] * 1000),
                       ("adk-bare", floors["bare"]), ("adk-shaped", floors["shaped"]),
                       ("escalate-memory", ours["memory_cpu"] * 1000), ("escalate-durable", ours["durable_cpu"] * 1000)):
        figures.add("turn", key, value)


def runs(sides: Sides, figures: Figures, count: int, round_: int) -> None:
    """`count` runs one after another on each side, each side a fresh process and database."""
    def floor_runs(*db: str) -> dict[str, float]:
        return json_line(subprocess.run([sys.executable, str(FLOOR), "runs", str(count), *db], cwd=sides.work,
                                        env=sides.peer_env, capture_output=True, text=True))

    peer_runs = sides.peer("many", "sync", str(count), str(sides.work / f"floor-many-{round_}.db"))
    figures.add("run-cpu", "langgraph", peer_runs["cpu"] * 1000 / count)
    figures.add("run-kb", "langgraph", peer_runs["rss_delta_kb"] / count)
    for key, result in (("adk", floor_runs()), ("adk-dbos", floor_runs(str(sides.work / f"floor-runs-{round_}.db")))):
        figures.add("run-cpu", key, result["cpu_ms"])
        figures.add("run-kb", key, result["kb"])
    folder = Path(tempfile.mkdtemp(dir=sides.work))
    ours = sides.escalate_child("many", str(count), str(folder), "sequential")
    figures.add("run-cpu", "escalate", ours.get("settled_cpu", ours["cpu"]) * 1000 / count)
    figures.add("run-kb", "escalate", ours["rss_delta_kb"] / count)


RUN_ROWS = (("langgraph", "LangGraph + SqliteSaver (the peer)"),
            ("adk", "the shaped agent's turn alone, in memory (no escalate)"),
            ("adk-dbos", "the same turn as a DBOS step, a DBOS workflow a run (no escalate)"),
            ("escalate", "escalate, each run parked once it waits (the product)"))

TURN_ROWS = (("langgraph-memory", "LangGraph, in memory"),
             ("langgraph-durable", "LangGraph + SqliteSaver, durable (the peer)"),
             ("adk-bare", "ADK's bare agent, in memory (no escalate)"),
             ("adk-shaped", "ADK's agent shaped as escalate's, in memory (no escalate)"),
             ("escalate-memory", "escalate, in memory"),
             ("escalate-durable", "escalate, durable (the product)"))


def peer(sides: Sides, figures: Figures, round_: int) -> None:
    """LangGraph's start and resume (bench_peer.py's), and its RSS at the approval."""
    peer_cold_and_shell(sides, figures, round_)
    figures.add("cpu", "langgraph", figures.get("cold_cpu", "langgraph")[-1])
    started = sides.peer("start", sides.saver, sides.peer_db, f"rss-{round_}")
    figures.add("rss", "langgraph", started["rss_kb"] / 1024)


def escalate(sides: Sides, figures: Figures, round_: int) -> None:
    """`escalate run` to its approval, `answer` + `resume` (bench_peer.py's), and the RSS of a
    `run --wait` of the same flow once it waits at the approval."""
    escalate_cold_and_shell(sides, figures, round_)
    figures.add("cpu", "escalate", figures.get("cold_cpu", "escalate")[-1])
    events = sides.work / f"floor-wait-{round_}.jsonl"
    launched = time.time()
    proc = sides.escalate("run", str(sides.source), "--script", str(sides.script), "--input", "go", "--wait",
                          events=events, wait=False)
    try:
        events_after(events, "human_escalation", launched)
        time.sleep(0.5)  # settled, as bench_peer.py's idle figure
        figures.add("rss", "escalate", rss_kb(proc.pid) / 1024)
    finally:
        proc.kill()
        proc.wait()


SIDES = (("langgraph", "LangGraph + SqliteSaver (the peer, durable)"),
         ("adk", "ADK alone, one turn in memory (no escalate, no durability)"),
         ("adk-dbos", "ADK + DBOS launched on SQLite (the specified stack, no escalate)"),
         ("escalate", "escalate `run` (the product, durable)"))


def table(figures: Figures) -> list[str]:
    lines = ["| stack | launch -> first turn done | CPU to its exit | RSS after the turn | "
             "first turn / LangGraph's |", "| --- | --- | --- | --- | --- |"]
    peer_cold = summary(figures.get("cold", "langgraph"))[0]
    for side, label in SIDES:
        cold = figures.get("cold", side)
        lines.append(f"| {label} | {cell(cold, 's', 2)} | {cell(figures.get('cpu', side), 's', 2)} | "
                     f"{cell(figures.get('rss', side), 'MiB', 0)} | {summary(cold)[0] / peer_cold:.2f}x |")
    shell_ours, shell_peer = (summary(figures.get("shell", side))[0] for side in ("escalate", "langgraph"))
    floor_cold = summary(figures.get("cold", "adk-dbos"))[0]
    lines += ["", "| answer from the shell -> next turn, no process waiting | seconds | / LangGraph's |",
              "| --- | --- | --- |",
              f"| LangGraph: a fresh process resumes the thread | {shell_peer:.2f} | 1.00x |",
              f"| floor: one fresh ADK + DBOS process to a turn (no answer written) | {floor_cold:.2f} | "
              f"{floor_cold / shell_peer:.2f}x |",
              f"| escalate: `answer` + `resume` | {shell_ours:.2f} | {shell_ours / shell_peer:.2f}x |"]
    if figures.get("turn", "langgraph-durable"):
        peer_turn = summary(figures.get("turn", "langgraph-durable"))[0]
        lines += ["", "| a turn's CPU | ms a turn | / LangGraph's durable turn |", "| --- | --- | --- |"]
        lines += [f"| {label} | {cell(figures.get('turn', key), 'ms', 2)} | "
                  f"{summary(figures.get('turn', key))[0] / peer_turn:.2f}x |" for key, label in TURN_ROWS]
    if figures.get("run-cpu", "langgraph"):
        peer_cpu, peer_kb = (summary(figures.get(key, "langgraph"))[0] for key in ("run-cpu", "run-kb"))
        lines += ["", "| runs one after another, each to its approval | CPU a run | RSS a run leaves | "
                      "CPU / LangGraph's | RSS / LangGraph's |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {label} | {cell(figures.get('run-cpu', key), 'ms', 2)} | {cell(figures.get('run-kb', key), 'KB', 1)} | "
                  f"{summary(figures.get('run-cpu', key))[0] / peer_cpu:.2f}x | "
                  f"{summary(figures.get('run-kb', key))[0] / peer_kb:.2f}x |" for key, label in RUN_ROWS]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200, help="turns of the per-turn loops (0: skip them)")
    parser.add_argument("--runs", type=int, default=200, help="runs one after another (0: skip them)")
    parser.add_argument("--escalate-src", help="the escalate tree to measure (its PYTHONPATH)")
    args = parser.parse_args()
    src = escalate_source(args.escalate_src)
    load = os.getloadavg()
    print(f"escalate: {src}; load average at start {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"({os.cpu_count()} CPUs)", flush=True)
    figures = Figures()
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as folder:
        sides = Sides(src, "sync", Path(folder))
        # the databases and bytecode exist before the first timed launch, as after a user's first run
        sides.escalate("run", str(sides.source), "--script", str(sides.script), "--input", "go")
        sides.peer("start", sides.saver, sides.peer_db, "first")
        subprocess.run([sys.executable, str(FLOOR), "adk-dbos", str(sides.work / "floor.db")], cwd=sides.work,
                       env=sides.peer_env, capture_output=True, check=True)
        steps = [lambda r: peer(sides, figures, r), lambda r: floor(sides, figures, "adk"),
                 lambda r: floor(sides, figures, "adk-dbos"), lambda r: escalate(sides, figures, r)]
        for round_ in range(args.rounds):
            for step in steps[round_ % len(steps):] + steps[:round_ % len(steps)]:  # who goes first rotates
                step(round_)
            if args.turns:
                turns(sides, figures, args.turns)
            if args.runs:
                runs(sides, figures, args.runs, round_)
            print(f"  round {round_ + 1}/{args.rounds} done (load {os.getloadavg()[0]:.1f})", flush=True)
    print()
    print("\n".join(table(figures)))


if __name__ == "__main__":
    main()
