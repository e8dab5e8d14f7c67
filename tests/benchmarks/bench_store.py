"""Store figures (`escalate console --store`). Prints numbers; asserts nothing about time.

    python tests/benchmarks/bench_store.py [--quick]

1. A store of 10,000 escalations (raised + resolved) and 10,000 agent-to-agent entries: file
   size, full load (parse, check, build), the session's opening (before the first frame: the
   file is only opened, a big one is read later), seeding the engine's agent history.
2. Append cost per line, for each kind (one os.write per line, O_APPEND).
3. The history screen's redraw over that store.
4. First frame of a fresh `escalate console --store BIG` (a big store is only opened before
   it, and read right after it) against the same console without a store.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

from first_frame import launches

from engine.escalation.agent_policy import EscalationHistory, HistoryEntry
from engine.escalation.clock import FakeClock
from engine.escalation.model import (
    Decision,
    Escalation,
    OnTimeout,
    Option,
    PendingEscalation,
    Reason,
    ResolvedBy,
    Response,
    ResponseType,
    TimeoutPolicy,
)
from engine.escalation.store import HistoryStore
from engine.runtime.engine import RunHandle, RunStatus
from rules import default_rules
from tui.screens.history import MAX_ROWS
from tui.session import ConsoleSession

QUICK = "--quick" in sys.argv
N = 2_000 if QUICK else 10_000


def pending(i: int, now: float) -> PendingEscalation:
    esc = Escalation(
        id=f"esc-{i}", task_id="auth-refactor", run_id=f"r{i % 50}-abcdef", agent="planner",
        reason=Reason.ARCHITECTURE_DECISION, question="Should I refactor the auth module to use JWT instead of sessions?",
        context="Touches src/api/auth.ts and 5 tests",
        options=(Option("opt1", "Yes, use JWT", recommended=True), Option("opt2", "No, keep sessions")),
        allow_agent_decision=True, timeout=120, created_at=now,
    )
    return PendingEscalation(esc, TimeoutPolicy(now + 120, OnTimeout.AGENT_DECIDE, timeout_seconds=120))


def write_big_store(path: Path, n: int) -> tuple[float, float, float]:
    """n escalations + n agent entries; returns seconds per line for raised, resolved, agent."""
    clock = FakeClock(1000.0)
    store = HistoryStore.open(path, clock)
    store.release()  # a new, empty store: nothing to read first
    costs = {"raised": 0.0, "resolved": 0.0, "agent": 0.0}
    for i in range(n):
        now = 1000.0 + i
        p = pending(i, now)
        decision = Decision(p.escalation.id, Response(ResponseType.OPTION, "opt1"), ResolvedBy.HUMAN, now + 3)
        entry = HistoryEntry(now, "codebase_locator", "codebase_analyzer", i % 3 != 0, "needs analysis",
                             "analyze the session store", None if i % 3 else "loop")
        t = time.perf_counter()
        store.write_raised(p)
        costs["raised"] += time.perf_counter() - t
        t = time.perf_counter()
        store.write_resolved(decision)
        costs["resolved"] += time.perf_counter() - t
        t = time.perf_counter()
        store.write_agent_entry(entry)
        costs["agent"] += time.perf_counter() - t
    run = RunHandle("r1", "t", "wf", None, "go", RunStatus.DONE, started_at=clock.now() - 5, finished_at=clock.now(),
                    result="done")
    t = time.perf_counter()
    for _ in range(1000):
        store.write_run(run)
    run_cost = (time.perf_counter() - t) / 1000
    store.close()
    print(f"append per line: raised {costs['raised'] / n * 1e6:.1f} µs, resolved {costs['resolved'] / n * 1e6:.1f} µs, "
          f"agent entry {costs['agent'] / n * 1e6:.1f} µs, run {run_cost * 1e6:.1f} µs")
    return costs["raised"] / n, costs["resolved"] / n, costs["agent"] / n


async def history_redraw(session: ConsoleSession) -> float:
    """The history screen's refresh (filters, rows, metrics) over the loaded store."""
    from tui.app import EscalateApp
    from tui.screens.history import HistoryScreen

    app = EscalateApp(session, open_engine=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        times = []
        for _ in range(5):
            t = time.perf_counter()
            screen.refresh_history()
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def first_frame(args: list[str], runs: int) -> float:
    return statistics.median(launches(args, runs))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "history.jsonl"
        write_big_store(path, N)
        lines = 2 * N + 1000
        print(f"store: {N:,} escalations + {N:,} agent entries + 1,000 runs = {lines:,} lines, "
              f"{path.stat().st_size / 1e6:.1f} MB")

        loads = []
        for _ in range(1 if QUICK else 3):
            store = HistoryStore.open(path, FakeClock(5.0))
            t = time.perf_counter()
            contents = store.load()
            loads.append(time.perf_counter() - t)
            store.close()
        assert len(contents.escalations) == N and len(contents.agent_entries) == N
        print(f"full load (parse, check, build objects): median {statistics.median(loads) * 1000:.0f} ms "
              f"({statistics.median(loads) / lines * 1e6:.1f} µs per line)")

        del contents
        gc.collect()  # the loads above left garbage; a fresh console has none
        t = time.perf_counter()
        session = ConsoleSession([], rules=default_rules(), clock=FakeClock(5.0), store=path)
        opened = time.perf_counter() - t
        print(f"session opening before the first frame (big store: opened, not read): {opened * 1000:.1f} ms")
        t = time.perf_counter()
        session.load_store()
        print(f"session load after the first frame (background thread in the console): "
              f"{(time.perf_counter() - t) * 1000:.0f} ms")
        entries = store.load().agent_entries
        history = EscalationHistory()
        t = time.perf_counter()
        history.add_earlier(entries)
        print(f"seeding the engine's agent history with {N:,} entries: {(time.perf_counter() - t) * 1000:.0f} ms")

        print(f"history screen redraw with {N:,} earlier escalations (newest {MAX_ROWS} drawn): "
              f"median {asyncio.run(history_redraw(session)) * 1000:.0f} ms")

        runs = 2 if QUICK else 5
        bare = first_frame([], runs)
        big = first_frame(["console", "--store", str(path)], runs)
        print(f"first frame, fresh process, median of {runs}: no store {bare * 1000:.0f} ms, "
              f"with this store {big * 1000:.0f} ms")


if __name__ == "__main__":
    main()
