"""Overhead of escalate over a bare LiteLLM call, per agent turn (prints numbers; no assertions).

A local OpenAI-compatible server (tests/models/llm_server.py) runs in a process of its own and
answers every request with the same short reply. This process then makes N model calls twice:

1. bare: `litellm.acompletion(...)` to the server, N times in a row;
2. escalate: a flow making N sequential `run agent` calls of one agent whose model block points
   `base_url` at the server (one model turn per call: ADK session, runner, LiteLlm wrapper,
   retry wrapper, budget callbacks, events), timed from its `agent_call` to its `agent_result`
   event.

Per turn: the median wall time and the median CPU time of this process, and their difference
(the overhead). The machine is shared: the load average is printed next to the figures.

Run: python tests/benchmarks/bench_real_models.py [N]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

FLOW = """
model main:
    provider: openai
    name: gpt-bench
    base_url: "{url}"
prompt p: \"\"\"Answer briefly.\"\"\"
agent main:
    instruction p
flow main:
    $x = $input
    loop max {n} do
        $x = run agent main $x
    end
    return $x
"""


def start_server() -> tuple[subprocess.Popen[str], str]:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "tests.models.llm_server"], cwd=root, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


async def bare(url: str, n: int) -> tuple[list[float], list[float]]:
    from engine.runtime.models import import_litellm

    litellm = import_litellm("bench")
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "ok"}]
    walls, cpus = [], []
    for _ in range(n + 5):
        w, c = time.perf_counter(), time.process_time()
        reply = await litellm.acompletion(model="openai/gpt-bench", api_base=url, messages=messages, num_retries=0, max_retries=0)
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
        assert reply.choices[0].message.content == "ok"
    return walls[5:], cpus[5:]  # the first calls open connections


async def escalate(url: str, n: int) -> tuple[list[float], list[float]]:
    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import RealClock
    from engine.runtime.engine import Engine, RunStatus
    from rules.loader import default_rules

    walls: list[float] = []
    cpus: list[float] = []
    started: list[tuple[float, float]] = []

    def timing(event) -> None:  # called synchronously as each event is emitted
        if event.type == "agent_call":
            started.append((time.perf_counter(), time.process_time()))
        elif event.type == "agent_result":
            w, c = started.pop()
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sr"
        path.write_text(FLOW.format(url=url, n=n + 5))
        clock = RealClock()
        engine = Engine(rules=default_rules(), broker=EscalationBroker(clock), clock=clock, workspace=Path(folder))
        engine.subscribe(timing)
        handle = engine.start_run(engine.load(path), input="ok")
        status = await handle.wait()
        assert status is RunStatus.DONE, handle.error
    return walls[5:], cpus[5:]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    proc, url = start_server()
    try:
        bare_wall, bare_cpu = asyncio.run(bare(url, n))
        esc_wall, esc_cpu = asyncio.run(escalate(url, n))
    finally:
        proc.terminate()
        proc.wait()
    ms = lambda values: statistics.median(values) * 1000  # noqa: E731
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores, shared machine: noisy)")
    print(f"{n} turns each, local OpenAI-compatible server in its own process")
    print(f"bare LiteLLM call      median wall {ms(bare_wall):7.2f} ms   median CPU {ms(bare_cpu):7.2f} ms")
    print(f"escalate agent turn    median wall {ms(esc_wall):7.2f} ms   median CPU {ms(esc_cpu):7.2f} ms")
    print(f"overhead per turn      median wall {ms(esc_wall) - ms(bare_wall):7.2f} ms   median CPU {ms(esc_cpu) - ms(bare_cpu):7.2f} ms")


if __name__ == "__main__":
    main()
