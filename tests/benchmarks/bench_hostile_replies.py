"""A hostile model server's huge replies (prints numbers; no assertions).

A local OpenAI-compatible server (tests/models/llm_server.py, in a process of its own) answers
one agent turn with a reply of 20 MB or 100 MB: an error body (HTTP 500), a whole 200 body, or a
streamed reply (SSE chunks of 64 KiB). For each, a child process runs the workflow on the real
Engine with a heartbeat task beside it (every 10 ms) and reports the largest gap between beats during
its second run (the first, answered briefly, imports and builds everything): how long the
event loop was blocked while the reply arrived. This process times the child from
start to exit and takes its peak RSS (`wait4`).

Gemini replies through google.genai are measured the same way with `--gemini`.

Run: python tests/benchmarks/bench_hostile_replies.py [--sizes 20,100] [--timeout 120] [--gemini]
(run it with PYTHONPATH at another checkout to measure that checkout's code).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024
BLOCK = 64 * 1024

OPENAI_FLOW = """
model main:
    provider: openai
    name: gpt-bench
    base_url: "{url}"
prompt p: \"\"\"Answer briefly.\"\"\"
agent main:
    instruction p
"""
GEMINI_FLOW = """
model main:
    provider: gemini
    name: gemini-bench
    base_url: "{root}"
prompt p: \"\"\"Answer briefly.\"\"\"
agent main:
    instruction p
"""

SERVER = """
import sys
from tests.models.llm_server import ModelServer, Turn
kind, size = sys.argv[1], int(sys.argv[2])
block = "x" * {block}
if kind == "error":
    turn = Turn(status=500, message="x" * size)
elif kind == "whole":
    turn = Turn(text="x" * size)
else:
    turn = Turn(chunks=[block] * (size // {block}))
server = ModelServer([Turn(text="warm")], default=turn)  # the first run warms up
print(server.port, flush=True)
server.httpd.serve_forever()
""".replace("{block}", str(BLOCK))


async def child(source: str, stream: bool) -> None:
    """Runs in the child: the workflow on the real Engine, and the heartbeat's largest gap."""
    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import RealClock
    from engine.runtime.engine import Engine
    from rules.loader import default_rules

    os.environ["ESCALATE_STREAM"] = "1" if stream else ""
    gap = 0.0
    stop = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal gap
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gap = max(gap, now - last - 0.01)
            last = now

    beats = asyncio.create_task(heartbeat())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sr"
        path.write_text(source)
        clock = RealClock()
        engine = Engine(rules=default_rules(), broker=EscalationBroker(clock), clock=clock, workspace=Path(folder))
        await engine.start_run(engine.load(path), input="hi").wait()  # imports, model built: not counted
        gap = 0.0
        handle = engine.start_run(engine.load(path), input="hi")
        await handle.wait()
    stop.set()
    await beats
    print(json.dumps({"status": handle.status.name, "error": (handle.error or "")[:200], "gap": gap}), flush=True)


def measure(kind: str, size: int, stream: bool, gemini: bool, timeout: float) -> str:
    env = dict(os.environ, OPENAI_API_KEY="sk-bench-not-a-real-key", GOOGLE_API_KEY="bench-key",
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    server = subprocess.Popen([sys.executable, "-c", SERVER, kind, str(size)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    url = f"http://127.0.0.1:{port}"
    source = GEMINI_FLOW.format(root=url) if gemini else OPENAI_FLOW.format(url=url + "/v1")
    try:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, __file__, "--child", json.dumps([source, stream])], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = started + timeout
        pid, _, usage = os.wait4(proc.pid, os.WNOHANG)
        while pid == 0 and time.perf_counter() < deadline:
            time.sleep(0.05)
            pid, _, usage = os.wait4(proc.pid, os.WNOHANG)
        elapsed = time.perf_counter() - started
        timed_out = pid == 0
        if timed_out:
            proc.send_signal(signal.SIGKILL)
            _, _, usage = os.wait4(proc.pid, 0)
        proc.returncode = -1  # reaped here (wait4), not by Popen
        out = proc.stdout.read() if proc.stdout else ""
    finally:
        server.kill()
        server.wait()
    rss = usage.ru_maxrss / 1024
    if timed_out:
        return f"killed after {elapsed:6.1f} s (timeout)  peak RSS {rss:7.0f} MB"
    report = json.loads(out.strip().splitlines()[-1])
    return (f"{report['status']:6} in {elapsed:6.1f} s  peak RSS {rss:7.0f} MB  max loop gap {report['gap'] * 1000:8.0f} ms"
            f"  | {report['error'][:110]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--sizes", default="20,100")
    parser.add_argument("--kinds", default="error,whole,stream")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--gemini", action="store_true")
    args = parser.parse_args()
    if args.child:
        source, stream = json.loads(args.child)
        asyncio.run(child(source, stream))
        return
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores, shared machine: noisy)")
    print(f"model: {'gemini (google.genai)' if args.gemini else 'openai (LiteLLM)'}; "
          f"child process = engine + 10 ms heartbeat; time = start to exit")
    for size_mb in (int(s) for s in args.sizes.split(",")):
        for kind in args.kinds.split(","):
            line = measure(kind, size_mb * MB, kind == "stream", args.gemini, args.timeout)
            print(f"{size_mb:4d} MB {kind:6}  {line}", flush=True)


if __name__ == "__main__":
    main()
