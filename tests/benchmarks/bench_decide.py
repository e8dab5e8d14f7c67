"""Decision figures (issue 16): prints numbers; asserts nothing about speed.

1. Batch: 50 tool approvals waiting in the console (each awaited by its own task, as a paused
   run does; decisions written to a real SQLite database); `b` opens the preview, `a` approves
   all 50: keys used, and the time from each key (sent through the driver, as a terminal does)
   to the frame that shows its result (bench_console's FrameProbe: the frame leaving for the
   terminal), p50/p95/max over REPEAT rounds.
2. Teach a rule: 200 tool approvals waiting on the broker (with and without the database); the
   time from saving the taught rule (engine/escalation/teaching.teach: the rules file edited and
   re-validated, the rules loaded again, every waiting request checked, the decisions written)
   until the 200 waiting tasks have woken with their decision, p50/p95/max over REPEAT rounds.

Run: .venv/bin/python tests/benchmarks/bench_decide.py
The machine is shared: the load average is printed beside the figures.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2]))  # tests.tui.helpers

from engine.durable.database import Database
from engine.durable.decisions import DecisionStore
from engine.durable.feed import Feed
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import FakeClock
from engine.escalation.desk import EscalationDesk
from engine.kernel.model import Escalation, Option, Origin, PendingEscalation, Reason, TimeoutPolicy
from engine.escalation.teaching import propose, teach
from rules.book import RuleBook
from rules.model import Action

REPEAT = 60  # rounds: the p95 of 60 is the 58th, not the slowest one
BATCH = 50
PENDING = 200
RULES = """\
# benchmark rules
escalationRules:
  taskOverrides:
    deploy:
      requireConfirmation: true
"""


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(samples: list[float]) -> str:
    return (f"p50 {statistics.median(samples):.1f} ms, p95 {pct(samples, 0.95):.1f} ms, "
            f"max {max(samples):.1f} ms ({len(samples)} rounds)")


def approval(clock: FakeClock, n: int, path: str = "RELEASED.txt") -> PendingEscalation:
    args = {"path": path, "content": "v1.4.2"}
    esc = Escalation(
        id=f"bench-{n}-{time.perf_counter_ns()}", task_id="deploy", run_id=f"r{n}", agent="deployer",
        reason=Reason.SECURITY_CONCERN, question="Allow deployer to call the tool write_file?",
        context=f'write_file({{"content": "v1.4.2", "path": "{path}"}})',
        options=(Option("approve", "Approve: run write_file"), Option("deny", "Deny: refuse this call")),
        origin=Origin.TOOL_APPROVAL, created_at=clock.now(),
    )
    return PendingEscalation(esc, TimeoutPolicy(None), {"tool": "write_file", "args": args})


async def bench_batch(folder: Path) -> None:
    from tests.benchmarks.bench_console import FrameProbe, press, settled
    from tests.tui.helpers import make_app, make_session
    from tui.screens.batch import BatchScreen
    from tui.session import settle_collector

    db = Database(f"sqlite:///{folder / 'batch.db'}")
    open_keys, approve_keys, handler, keys_used = [], [], [], set()
    try:
        for _round in range(REPEAT):
            session = make_session()
            session.broker.store = DecisionStore(db)
            app = make_app(session)
            async with app.run_test(size=(120, 40)) as pilot:
                probe = FrameProbe(app)
                waiters = [asyncio.get_running_loop().create_task(session.broker.ask(approval(session.clock, n)))
                           for n in range(BATCH)]
                while len(session.pending()) < BATCH:
                    await pilot.pause()
                await pilot.pause(0.3)
                settle_collector()  # as the console does once started (tui/session.py)
                app.main.focus_decision()
                await pilot.pause(0.1)
                chosen = app._batch_chosen

                def timed(choice: object, chosen=chosen) -> None:
                    t = time.perf_counter()
                    chosen(choice)
                    handler.append((time.perf_counter() - t) * 1000)

                app._batch_chosen = timed  # the decisions applied and the inbox and pane brought in line
                frame = probe.next_frame(lambda: isinstance(app.screen, BatchScreen))
                t = press(app, "b")
                open_keys.append((await settled(frame, "the batch preview") - t) * 1000)
                await pilot.pause(0.1)
                frame = probe.next_frame(lambda: not session.pending() and app.screen is app.main)
                t = press(app, "a")
                approve_keys.append((await settled(frame, "the screen after the batch") - t) * 1000)
                keys_used.add(2)
                decided = await asyncio.gather(*waiters)
                assert len({d.escalation_id for d in decided}) == BATCH and all(
                    d.response.selected_option == "approve" for d in decided)
    finally:
        db.close()
    print(f"batch-approve {BATCH} waiting tool approvals (SQLite), keys used: {sorted(keys_used)} (b, a)")
    print(f"  b -> preview of {BATCH} on screen: {summary(open_keys)}")
    print(f"  a -> {BATCH} approved, screen updated: {summary(approve_keys)}")
    print(f"     of which the batch applied (decisions written in one transaction, inbox and pane synced): {summary(handler)}")
    print(f"  each round, ms: b {[round(x) for x in open_keys]}; a {[round(x) for x in approve_keys]}")


async def bench_teach(folder: Path, with_db: bool) -> None:
    samples, cpu = [], []
    db = Database(f"sqlite:///{folder / 'teach.db'}") if with_db else None
    try:
        for round_ in range(REPEAT):
            rules_path = folder / f"rules-{with_db}-{round_}.yaml"
            rules_path.write_text(RULES)
            book = RuleBook(explicit=rules_path)
            clock = FakeClock(1000.0)
            broker = EscalationBroker(clock, store=DecisionStore(db) if db is not None else None)
            desk = EscalationDesk(broker, book.load(), clock)
            feed = Feed(broker, broker.store) if db is not None else None  # news of its own decisions, as before
            if feed is not None:
                feed.start()
            items = [approval(clock, n) for n in range(PENDING)]
            waiters = [asyncio.get_running_loop().create_task(broker.ask(p)) for p in items]
            other = asyncio.get_running_loop().create_task(broker.ask(approval(clock, PENDING, "OTHER.txt")))
            while len(broker.pending()) < PENDING + 1:
                await asyncio.sleep(0)
            proposal = propose(items[0], Action.ALLOW)
            t0, c0 = time.perf_counter(), time.thread_time()
            _rule, released = teach(desk, book, proposal)
            decisions = await asyncio.gather(*waiters)  # every waiting task has its decision
            samples.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
            assert len(released) == PENDING and all(d.response.selected_option == "approve" for d in decisions)
            assert len(broker.pending()) == 1  # the other call is not matched
            other.cancel()
            await asyncio.gather(other, return_exceptions=True)
            if feed is not None:
                feed.stop()  # its news reader (the decisions it wrote came back as news)
    finally:
        if db is not None:
            db.close()
    where = "with the SQLite database" if with_db else "in memory"
    print(f"teach a rule -> {PENDING} matching waiting requests released ({where}, 1 other left waiting):")
    print(f"  wall {summary(samples)}")
    print(f"  CPU of the thread {summary(cpu)}")
    print(f"  each round, ms: {[round(x) for x in samples]}")


async def main() -> None:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores, shared machine)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        await bench_teach(folder, with_db=False)
        await bench_teach(folder, with_db=True)
        await bench_batch(folder)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    asyncio.run(main())
