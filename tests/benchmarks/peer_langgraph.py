"""The LangGraph side of bench_peer.py: the same agent loop as its escalate workflow, written the
way LangGraph documents it. A StateGraph whose `agent` node calls a scripted model function; the
first reply asks for an approval, which an `approve` node takes with `interrupt()`; `Command(
resume=...)` answers it. Durable on a SQLite file through SqliteSaver or AsyncSqliteSaver (escalate's
runs are asyncio), with `durability="sync"`: each step's checkpoint is written before the next step
starts, as DBOS records a step before the flow goes on.

Run as a fresh process by bench_peer.py (prints one JSON line; times are `time.time()`; SAVER is
`sync` for SqliteSaver, `async` for AsyncSqliteSaver):
    python peer_langgraph.py start SAVER DB THREAD   # to the approval: {"waiting": t, "rss_kb": n}
    python peer_langgraph.py resume SAVER DB THREAD  # answer it: {"next_turn": t} (then to the end)
    python peer_langgraph.py live SAVER DB THREAD    # to the approval ({"waiting": t}), then a line on
                                                     # stdin answers it here: {"answered": t, "next_turn": t}
    python peer_langgraph.py turns N                 # seconds per turn: {"memory", "durable_sync", "durable_async"}
                                                     # and each one's CPU seconds per turn ("memory_cpu", ...)
    python peer_langgraph.py many SAVER N DB         # N threads to their approval (sync: one after another;
                                                     # async: all at once, asyncio.gather):
                                                     # {"seconds", "cpu", "rss_delta_kb", "objects_delta_kb", "objects"}
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, TypedDict

TURNS = 10  # model turns of a run, the first of which asks for the approval
SHORT = 5  # turns of the short loop whose CPU time is subtracted from a long one's
APPROVAL = {"question": "Go on?", "options": ["go"]}


class State(TypedDict, total=False):
    turn: int
    text: str
    asks: bool
    decision: str


def scripted_model(turn: int, approval: bool) -> dict[str, Any]:
    """The model's reply for this turn: the first one asks for the approval when there is one."""
    if approval and turn == 1:
        return {"asks": True, "text": ""}
    return {"asks": False, "text": f"reply {turn}"}


def build(turns: int, *, approval: bool, checkpointer: Any = None) -> Any:
    """The compiled graph: `agent` -> (`approve` ->) `agent` ... until `turns` model turns."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def agent(state: State) -> State:
        turn = state.get("turn", 0) + 1
        reply = scripted_model(turn, approval)
        return {"turn": turn, "text": reply["text"], "asks": reply["asks"]}

    def approve(state: State) -> State:
        return {"asks": False, "decision": interrupt(APPROVAL)}

    def route(state: State) -> str:
        if state["asks"]:
            return "approve"
        return END if state["turn"] >= turns else "agent"

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("approve", approve)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route, ["approve", "agent", END])
    graph.add_edge("approve", "agent")
    return graph.compile(checkpointer=checkpointer)


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 100_000}  # the long per-turn loops


def rss_kb(pid: int | str = "self") -> int:
    """A process's resident memory (KB), this one's by default."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def pymalloc_kb() -> dict[str, int]:
    """This process's Python small-object heap (pymalloc, sys._debugmallocstats on stderr), KB:
    `objects`, the bytes its live blocks hold, and `free`, the free space inside its arenas (what
    a burst of allocations leaves behind, held in RSS)."""
    read, write = os.pipe()
    saved = os.dup(2)
    try:
        os.dup2(write, 2)
        sys._debugmallocstats()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    found = {}
    for line in b"".join(chunks).decode().splitlines():
        for key, name in (("# bytes in allocated blocks", "objects"), ("# bytes in available blocks", "free")):
            if line.startswith(key):
                found[name] = int(line.rsplit("=", 1)[1].strip().replace(",", "")) // 1024
    return found


def run_sync(db: str, thread: str, value: Any, on_update: Callable[[dict[str, Any]], None],
             *, answer: Any = None) -> dict[str, Any]:
    """Invoke the approval graph on `thread` (its input or a Command) with SqliteSaver; with
    `answer`, once it waits, call it for the answer and resume the thread in this same process."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(db) as saver:
        graph = build(TURNS, approval=True, checkpointer=saver)
        for update in graph.stream(value, config(thread), durability="sync", stream_mode="updates"):
            on_update(update)
        if answer is not None:
            for update in graph.stream(answer(), config(thread), durability="sync", stream_mode="updates"):
                on_update(update)
        return graph.get_state(config(thread)).values


async def run_async(db: str, thread: str, value: Any, on_update: Callable[[dict[str, Any]], None],
                    *, answer: Any = None) -> dict[str, Any]:
    """The same with AsyncSqliteSaver, on an event loop (`answer` blocks it: nothing else runs)."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        graph = build(TURNS, approval=True, checkpointer=saver)
        async for update in graph.astream(value, config(thread), durability="sync", stream_mode="updates"):
            on_update(update)
        if answer is not None:
            async for update in graph.astream(answer(), config(thread), durability="sync", stream_mode="updates"):
                on_update(update)
        return (await graph.aget_state(config(thread))).values


def invoke(saver: str, db: str, thread: str, value: Any, on_update: Callable[[dict[str, Any]], None],
           *, answer: Any = None) -> dict[str, Any]:
    if saver == "sync":
        return run_sync(db, thread, value, on_update, answer=answer)
    return asyncio.run(run_async(db, thread, value, on_update, answer=answer))


def start(saver: str, db: str, thread: str) -> dict[str, Any]:
    """A new thread to its approval: the time it waits there (its checkpoint written)."""
    updates: list[dict[str, Any]] = []
    invoke(saver, db, thread, {"turn": 0}, updates.append)
    assert "__interrupt__" in updates[-1], updates
    return {"waiting": time.time(), "rss_kb": rss_kb()}


def resume(saver: str, db: str, thread: str) -> dict[str, Any]:
    """The approval answered: the time the next turn's step is done, then on to the end."""
    from langgraph.types import Command

    next_turn: list[float] = []

    def seen(update: dict[str, Any]) -> None:
        if not next_turn and "agent" in update:
            next_turn.append(time.time())

    values = invoke(saver, db, thread, Command(resume="go"), seen)
    assert values["turn"] == TURNS and values["decision"] == "go", values
    return {"next_turn": next_turn[0]}


def live(saver: str, db: str, thread: str) -> dict[str, Any]:
    """A thread to its approval, then this process waits for the answer on stdin (a line from
    another process) and resumes it itself: the time from the answer read to the next turn done."""
    from langgraph.types import Command

    times: dict[str, float] = {}

    def seen(update: dict[str, Any]) -> None:
        if "__interrupt__" in update:
            print(json.dumps({"waiting": time.time()}), flush=True)
        elif "answered" in times and "next_turn" not in times and "agent" in update:
            times["next_turn"] = time.time()

    def answer() -> Any:
        sys.stdin.readline()
        times["answered"] = time.time()
        return Command(resume="go")

    values = invoke(saver, db, thread, {"turn": 0}, seen, answer=answer)
    assert values["turn"] == TURNS and values["decision"] == "go", values
    return times


async def loop_async(turns: int, checkpointer: Any) -> tuple[float, float]:
    """A loop of `turns` turns, no approval, on an event loop: its wall and CPU seconds."""
    graph = build(turns, approval=False, checkpointer=checkpointer)
    durability = {"durability": "sync"} if checkpointer is not None else {}  # none without one (LangGraph fails)
    wall, cpu = time.perf_counter(), time.process_time()
    out = await graph.ainvoke({"turn": 0}, config(f"t{time.monotonic_ns()}"), **durability)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert out["turn"] == turns, out
    return wall, cpu


def loop_sync(turns: int, checkpointer: Any) -> tuple[float, float]:
    graph = build(turns, approval=False, checkpointer=checkpointer)
    wall, cpu = time.perf_counter(), time.process_time()
    out = graph.invoke({"turn": 0}, config(f"t{time.monotonic_ns()}"), durability="sync")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert out["turn"] == turns, out
    return wall, cpu


def per_turn(long: tuple[float, float], short: tuple[float, float], turns: int) -> tuple[float, float]:
    """Wall seconds per turn of the long loop, and CPU seconds per turn between a short and a long
    loop (what is paid once cancels out: CPU time holds on a loaded host where wall time does not)."""
    return long[0] / turns, (long[1] - short[1]) / (turns - SHORT)


async def turns_figures(turns: int) -> dict[str, float]:
    """One round: in memory (no checkpointer), durable with AsyncSqliteSaver and with SqliteSaver
    (each on a fresh SQLite file), each warmed up first."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    folder = Path(tempfile.mkdtemp())
    await loop_async(SHORT, None)
    figures = {"memory": per_turn(await loop_async(turns, None), await loop_async(SHORT, None), turns)}
    async with AsyncSqliteSaver.from_conn_string(str(folder / "lg.db")) as saver:
        await loop_async(SHORT, saver)
        figures["durable_async"] = per_turn(await loop_async(turns, saver), await loop_async(SHORT, saver), turns)
    with SqliteSaver.from_conn_string(str(folder / "lg-sync.db")) as saver:
        loop_sync(SHORT, saver)
        figures["durable_sync"] = per_turn(loop_sync(turns, saver), loop_sync(SHORT, saver), turns)
    return {**{k: v[0] for k, v in figures.items()}, **{f"{k}_cpu": v[1] for k, v in figures.items()}}


def many(saver: str, count: int, db: str) -> dict[str, Any]:
    """`count` threads brought to their approval in this process (SqliteSaver: one after another,
    on one connection; AsyncSqliteSaver: all at once), and the memory they leave behind."""
    if saver == "sync":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(db) as checkpointer:
            graph = build(TURNS, approval=True, checkpointer=checkpointer)
            graph.invoke({"turn": 0}, config("warm"), durability="sync")
            gc.collect()
            heap, objects = pymalloc_kb()["objects"], len(gc.get_objects())
            before, started, cpu = rss_kb(), time.perf_counter(), time.process_time()
            outs = [graph.invoke({"turn": 0}, config(f"t{i}"), durability="sync") for i in range(count)]
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    else:
        cpu = time.process_time()
        seconds, before, heap, objects, outs = asyncio.run(many_async(count, db))
        cpu = time.process_time() - cpu  # the saver's connection opened and closed too
    assert all("__interrupt__" in out for out in outs)
    del outs  # the interrupts returned: what a caller reads, then drops (LangGraph keeps the rows)
    gc.collect()
    return {"seconds": seconds, "cpu": cpu, "rss_delta_kb": rss_kb() - before,
            "objects_delta_kb": pymalloc_kb()["objects"] - heap, "objects": len(gc.get_objects()) - objects,
            "waiting": count}


async def many_async(count: int, db: str) -> tuple[float, int, int, int, list[Any]]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(db) as checkpointer:
        graph = build(TURNS, approval=True, checkpointer=checkpointer)
        await graph.ainvoke({"turn": 0}, config("warm"), durability="sync")
        gc.collect()
        heap, objects = pymalloc_kb()["objects"], len(gc.get_objects())
        before, started = rss_kb(), time.perf_counter()
        outs = await asyncio.gather(*(graph.ainvoke({"turn": 0}, config(f"t{i}"), durability="sync")
                                      for i in range(count)))
        return time.perf_counter() - started, before, heap, objects, outs


def main(argv: list[str]) -> None:
    command, *rest = argv
    if command == "start":
        result = start(*rest)
    elif command == "resume":
        result = resume(*rest)
    elif command == "live":
        result = live(*rest)
    elif command == "turns":
        result = asyncio.run(turns_figures(int(rest[0])))
    elif command == "many":
        result = many(rest[0], int(rest[1]), rest[2])
    else:
        raise SystemExit(f"unknown command {command!r}")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
