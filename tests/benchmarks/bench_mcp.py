"""`escalate mcp` (prints numbers; asserts nothing about time).

One real `escalate mcp` server (stdio, started by the `mcp` package's client) and, in this
process, what an open console has: the services opened with `hear_everything` on the same
SQLite file, its broker's subscribers told of every escalation raised anywhere. Per call:

1. raised -> listed: from `call_tool` sent by the client until this "console" is told of the
   escalation (the server checks the arguments, writes the row, the console hears the news);
2. answered -> result: from the console's answer (`broker.answer`, what a key press in the
   pane does) until the client holds the tool's result.

Also: the server's start (process start, imports, database open) until `list_tools` answers.

Run: python tests/benchmarks/bench_mcp.py [--quick]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT))

QUICK = "--quick" in sys.argv
CALLS = 20 if QUICK else 100
STARTS = 3 if QUICK else 10


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


def show(name: str, values: list[float]) -> None:
    ms = [v * 1000 for v in values]
    print(f"{name:38s} n={len(ms):4d}  median {statistics.median(ms):7.1f} ms  p95 {p95(ms):7.1f} ms  "
          f"max {max(ms):7.1f} ms")


async def main() -> None:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from engine.escalation.broker import RAISED
    from engine.kernel.model import Response, ResponseType
    from engine.services import open_services

    folder = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    project = folder / "proj"
    project.mkdir()
    db_url = f"sqlite:///{folder / 'escalate.db'}"
    env = {**os.environ, "ESCALATE_DB": db_url, "PYTHONPATH": str(ROOT)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "engine", "mcp"], env=env, cwd=project)

    starts = []
    with (folder / "server.log").open("a") as errlog:
        for _ in range(STARTS):
            began = time.perf_counter()
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.list_tools()
                starts.append(time.perf_counter() - began)

        console = await open_services(db_url, identity="bench console", hear_everything=True)
        heard: dict[str, float] = {}
        news = asyncio.Event()

        def on_event(event) -> None:  # noqa: ANN001
            if event.kind == RAISED:
                heard[event.pending.escalation.id] = time.perf_counter()
                news.set()

        console.broker.subscribe(on_event)
        listed, answered = [], []
        try:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                for n in range(CALLS):
                    news.clear()
                    known = set(heard)
                    began = time.perf_counter()
                    call = asyncio.ensure_future(client.call_tool("escalate_to_human", {
                        "reason": "architecture_decision", "question": f"Question {n}?", "requestId": f"bench-{n}",
                        "options": [{"id": "a", "label": "A", "recommended": True}, {"id": "b", "label": "B"}]}))
                    while not set(heard) - known:
                        await asyncio.wait_for(news.wait(), 30)
                        news.clear()
                    (esc_id,) = set(heard) - known
                    listed.append(heard[esc_id] - began)
                    decided = time.perf_counter()
                    console.broker.answer(esc_id, Response(ResponseType.OPTION, selected_option="a"))
                    result = await asyncio.wait_for(call, 30)
                    answered.append(time.perf_counter() - decided)
                    assert result.structured_content["selectedOption"] == "a", result
        finally:
            console.close()
    print(f"escalate mcp, {CALLS} calls on one SQLite database ({os.cpu_count()} cores, shared host: noisy)")
    show("server start -> list_tools answered", starts)
    show("call_tool -> listed in a console", listed)
    show("answered in the console -> tool result", answered)


if __name__ == "__main__":
    asyncio.run(main())
