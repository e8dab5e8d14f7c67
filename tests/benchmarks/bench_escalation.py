"""Escalation figures (issue 4). Prints numbers; asserts nothing about speed.

Run: /work/.venv/bin/python tests/benchmarks/bench_escalation.py
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import time
import tracemalloc
from collections import Counter

from engine.escalation.agent_policy import AgentEscalationHandler, AgentEscalationRequest, AgentPolicy
from engine.escalation.broker import RAISED, RESOLVED, EscalationBroker
from engine.kernel.clock import FakeClock
from engine.escalation.desk import EscalationDesk, new_escalation_id
from engine.kernel.model import Escalation, Option, Reason
from rules import default_rules


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_policy(name: str, policy: AgentPolicy, history_size: int = 100_000, samples: int = 20_000) -> None:
    """Fill the history with `history_size` decisions (over 1000 s, so the 300 s loop window
    holds 30% of them), then time `samples` more requests one by one."""
    sources = [s for s in ("codebase_locator", "codebase_analyzer", "codebase_pattern_finder", "orchestrator")
               if policy.is_source(s)] or [f"agent_{i}" for i in range(20)]
    reasons = ["analyze the module", "find a similar pattern", "locate the callers", "no hint at all"]
    clock = FakeClock()
    handler = AgentEscalationHandler(policy, clock)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(history_size):
        clock.advance(0.01)
        handler.handle(AgentEscalationRequest(sources[i % len(sources)], reasons[i % 4], "task", ""))
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    times, cpu = [], []
    for i in range(samples):
        req = AgentEscalationRequest(sources[i % len(sources)], reasons[i % 4], "task", "", chain=("x",) * (i % 3))
        c0 = time.thread_time_ns()
        t0 = time.perf_counter()
        handler.handle(req)
        times.append((time.perf_counter() - t0) * 1e6)
        cpu.append((time.thread_time_ns() - c0) / 1e3)
    t0 = time.perf_counter()
    recent = handler.history.recent(300, clock.now())
    recent_us = (time.perf_counter() - t0) * 1e6
    t0 = time.perf_counter()
    rate = handler.history.success_rate(sources[0], 300, clock.now())
    rate_us = (time.perf_counter() - t0) * 1e6
    print(f"policy handler, {name}, {history_size:,} history entries ({samples:,} timed requests):")
    print(f"  wall p50 {pct(times, 0.5):.1f} us, p99 {pct(times, 0.99):.1f} us, max {max(times):.1f} us; "
          f"CPU p50 {pct(cpu, 0.5):.1f} us, p99 {pct(cpu, 0.99):.1f} us (CPU time ignores other processes)")
    print(f"  history memory: {used / history_size:.0f} bytes per entry (tracemalloc; reason/task strings shared)")
    print(f"  recent(300 s) -> {len(recent):,} entries in {recent_us:.0f} us; success_rate(300 s) in {rate_us:.1f} us ({rate:.2f})")


def stress_policy() -> AgentPolicy:
    """20 agents, each allowed 5 targets, all edges recently used: the loop search's worst case."""
    agents = [f"agent_{i}" for i in range(20)]
    return AgentPolicy(
        {a: [b for b in agents if b != a][:5] for a in agents},
        {a: agents[:2] for a in agents},
        max_depth=3,
        loop_window=300,
        target_hints={"pattern": "agent_3", "analyze": "agent_4", "find": "agent_5"},
    )


async def bench_timeouts(n: int = 10_000) -> None:
    clock = FakeClock()
    broker = EscalationBroker(clock)
    desk = EscalationDesk(broker, default_rules(), clock)
    resolved: Counter[str] = Counter()
    broker.subscribe(lambda e: resolved.update([e.pending.escalation.id]) if e.kind == RESOLVED else None)
    reasons = [Reason.COST_WARNING, Reason.TEST_FAILURE, Reason.BREAKING_CHANGE, Reason.UNCLEAR_REQUIREMENT]
    t0 = time.perf_counter()
    tasks = [
        asyncio.create_task(desk.decide(Escalation(
            id=new_escalation_id(), task_id="bench", run_id=f"run{i % 100}", agent="a",
            reason=reasons[i % 4], question=f"question {i}", timeout=float(1 + i % 600),
        )))
        for i in range(n)
    ]
    await asyncio.sleep(0)
    raised = time.perf_counter()
    for _ in range(700):
        clock.advance(1)
    decisions = await asyncio.gather(*tasks)
    wall = time.perf_counter() - t0
    duplicates = sum(1 for c in resolved.values() if c > 1)
    by = Counter(d.resolved_by.value for d in decisions)
    print(f"{n:,} escalations timing out on a fake clock: {wall:.2f} s wall "
          f"(raise {raised - t0:.2f} s), {len(resolved):,} resolved, {duplicates} duplicates, {dict(by)}")


async def bench_visibility(samples: int = 5_000, background: int = 200) -> None:
    clock = FakeClock()
    broker = EscalationBroker(clock)
    desk = EscalationDesk(broker, default_rules(), clock)
    seen: dict[str, float] = {}
    broker.subscribe(lambda e: seen.setdefault(e.pending.escalation.id, time.perf_counter()) if e.kind == RAISED else None)
    keep = [asyncio.create_task(desk.decide(Escalation(
        id=new_escalation_id(), task_id="bg", run_id=f"bg{i}", agent="a", reason=Reason.ARCHITECTURE_DECISION,
        question="pending", options=(Option("o1", "One"),),
    ))) for i in range(background)]
    await asyncio.sleep(0)
    lat = []
    for i in range(samples):
        esc = Escalation(id=new_escalation_id(), task_id="t", run_id=f"r{i % 50}", agent="a",
                         reason=Reason.ARCHITECTURE_DECISION, question=f"q {i}", context="some context " * 20)
        t0 = time.perf_counter()
        task = asyncio.create_task(desk.decide(esc))
        await asyncio.sleep(0)  # the decide coroutine runs up to the broker's await
        lat.append((seen[esc.id] - t0) * 1000)
        task.cancel()
    for t in keep:
        t.cancel()
    await asyncio.gather(*keep, return_exceptions=True)
    print(f"raised -> visible to subscribers ({samples:,} samples, {background} pending): "
          f"p50 {pct(lat, 0.5):.3f} ms, p99 {pct(lat, 0.99):.3f} ms, mean {statistics.mean(lat):.3f} ms")


if __name__ == "__main__":
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    bench_policy("shipped seed 002 policy (4 agents)", AgentPolicy.from_config(default_rules().policy))
    bench_policy("stress policy (20 agents x 5 paths)", stress_policy())
    asyncio.run(bench_timeouts())
    asyncio.run(bench_visibility())
