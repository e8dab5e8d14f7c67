"""Console figures (issue 5). Prints numbers; asserts nothing about time.

    python tests/benchmarks/bench_console.py [--quick]

1. First frame: a fresh `escalate` process (the bundled demo) until Textual's first frame, and
   whether ADK was already imported then (it must not be).
2. 20 busy runs (real ADK runs of scripted agents in a loop) while other runs escalate one at a
   time: broker "raised" -> the pane's first frame showing it; key "1" -> the paused agent's run
   resumes (its `decision` event).
3. 200 pending decisions from 50 runs (each run: 4 agents in `parallel`, each asking): key ->
   next frame while answering all 200 through the pane, `]` navigation on the full queue, and
   a check that every agent received the option pressed for its own escalation.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import yaml

import tui  # noqa: F401  before Textual, as `escalate` does: the console's frame rate (tui/__init__.py)
from textual import events

from first_frame import adk_before_first_frame, with_floor  # tests/benchmarks/, the script's own folder

from engine.escalation.broker import RAISED
from engine.kernel.clock import RealClock
from engine.runtime.priority_loop import PriorityLoop
from rules import default_rules
from tui.app import EscalateApp
from tui.session import ConsoleSession, RunRequest, WorkflowEntry
from tui.widgets.decision_pane import DecisionPane

QUICK = "--quick" in sys.argv
# --durable: the sessions keep their runs in a database (SQLite), as `escalate` does.
DURABLE = "--durable" in sys.argv


def db_url(folder: Path, name: str) -> str | None:
    return f"sqlite:///{folder / name}" if DURABLE else None

def first_frame(runs: int) -> None:
    console, floor = with_floor([], runs)  # no arguments: the bundled demo
    ms = sorted(t * 1000 for t in console)
    print(f"first frame (`escalate` on a pseudo-terminal, bundled demo): median {statistics.median(ms):.0f} ms, "
          f"p90 {ms[int(0.9 * (len(ms) - 1))]:.0f} ms, max {ms[-1]:.0f} ms over {runs} launches; "
          f"{sum(t < 0.5 for t in console)} of {runs} under 500 ms")
    print(f"  Textual's floor in the same minutes (one-label app): median {statistics.median(floor) * 1000:.0f} ms; "
          f"the console adds median {statistics.median(c - f for c, f in zip(console, floor)) * 1000:.0f} ms; "
          f"ADK imported before the first frame: {adk_before_first_frame([])}")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def report(name: str, values: list[float]) -> None:
    ms = [v * 1000 for v in values]
    print(f"{name}: n={len(ms)} p50 {statistics.median(ms):.1f} ms, p95 {p95(ms):.1f} ms, max {max(ms):.1f} ms")


def write_workspace(folder: Path, busy_calls: int) -> dict[str, Path]:
    """Three scripted workflows: a busy loop, a single ask, and four parallel asks."""
    ask_options = [{"id": f"opt{i}", "label": f"choice {i}"} for i in (1, 2, 3)]

    def asking(agent: str) -> list:
        replies: list = [{"escalate": {"reason": "unclear_requirement", "question": f"{agent}: which?",
                                       "options": ask_options, "allowAgentDecision": False}}]
        replies += [{"text": f"{agent}=opt{i}", "when": f"Chosen option: opt{i}"} for i in (1, 2, 3)]
        return replies

    files = {
        "busy": ("model main = anthropic/claude-sonnet-4\nprompt p: \"\"\"Work.\"\"\"\nagent w:\n"
                 "    instruction p\nflow main:\n    loop max " + str(busy_calls) + " do\n"
                 "        $x = run agent w $input\n    end\n    return $x\n",
                 {"agents": {"w": ["working"] * busy_calls}}),
        "ask": ("model main = anthropic/claude-sonnet-4\nprompt p: \"\"\"Ask.\"\"\"\nagent q:\n"
                "    instruction p\nflow main:\n    $a = run agent q $input\n    return $a\n",
                {"agents": {"q": asking("q")}}),
        "fan": ("model main = anthropic/claude-sonnet-4\nprompt p: \"\"\"Ask.\"\"\"\n"
                + "".join(f"agent a{i}:\n    instruction p\n" for i in range(1, 5))
                + "flow main:\n    parallel do\n"
                + "".join(f"        $r{i} = run agent a{i} $input\n" for i in range(1, 5))
                + "    end\n    return $r1 + \" \" + $r2 + \" \" + $r3 + \" \" + $r4\n",
                {"agents": {f"a{i}": asking(f"a{i}") for i in range(1, 5)}}),
    }
    paths = {}
    for name, (source, script) in files.items():
        (folder / f"{name}.sr").write_text(source)
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(script))
        paths[name] = folder / f"{name}.sr"
    return paths


class FrameProbe:
    """Wraps App._display (where each frame's update leaves for the terminal) to time frames."""

    def __init__(self, app: EscalateApp) -> None:
        self.waiters: list[tuple[Callable[[], bool], asyncio.Future[float]]] = []
        original = app._display

        def display(screen, renderable) -> None:  # noqa: ANN001
            original(screen, renderable)
            if renderable is None:
                return
            now = time.perf_counter()
            for waiter in list(self.waiters):
                check, future = waiter
                if not future.done() and check():
                    future.set_result(now)
                    self.waiters.remove(waiter)

        app._display = display  # type: ignore[method-assign]

    def next_frame(self, check: Callable[[], bool] = lambda: True) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters.append((check, future))
        return future


def press(app: EscalateApp, key: str) -> float:
    """Send a key the way a terminal does (through the driver), without the Pilot's idle waits."""
    char = key if len(key) == 1 else None
    event = events.Key(key, char)
    event.set_sender(app)
    t = time.perf_counter()
    app._driver.send_message(event)  # type: ignore[union-attr]
    return t


async def settled(future: asyncio.Future[float], what: str, timeout: float = 30.0) -> float:
    """The future's time; a benchmark that never sees it fails loudly instead of hanging."""
    try:
        return await asyncio.wait_for(future, timeout)
    except asyncio.TimeoutError:
        raise TimeoutError(f"benchmark: {what} never came") from None


async def until(predicate: Callable[[], object], timeout: float = 120.0) -> None:
    end = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > end:
            raise TimeoutError("benchmark state not reached")
        await asyncio.sleep(0.005)


def decision_seen(run_id: str, future: asyncio.Future[float]) -> Callable[[object], None]:
    """A run-event subscriber noting when `run_id` got its decision (the agent resumed)."""

    def seen(event) -> None:  # noqa: ANN001
        if event.run_id == run_id and event.type == "decision" and not future.done():
            future.set_result(time.perf_counter())

    return seen


async def busy_and_escalating(folder: Path, paths: dict[str, Path], busy_runs: int, asks: int) -> None:
    session = ConsoleSession([WorkflowEntry(paths[n], paths[n].with_suffix(".yaml")) for n in ("busy", "ask")],
                             rules=default_rules(), clock=RealClock(), workspace=folder, db_url=db_url(folder, "busy.db"))
    app = EscalateApp(session)
    raised_at: dict[str, float] = {}
    session.broker.subscribe(lambda e: raised_at.setdefault(e.pending.escalation.id, time.perf_counter())
                             if e.kind == RAISED else None)
    async with app.run_test(size=(120, 40)):
        probe = FrameProbe(app)
        await until(app.engine_ready.is_set)
        busy, ask = session.workflows
        runs = [app.start(busy, RunRequest(None, "go")) for _ in range(busy_runs)]
        await asyncio.sleep(0.5)  # the busy runs are in full swing
        pane = app.main.query_one(DecisionPane)
        shown, resumed = [], []
        for _ in range(asks):
            handle = app.start(ask, RunRequest(None, "ask"))
            # Armed before this coroutine yields: the run cannot be drawn before.
            frame = probe.next_frame(lambda h=handle: pane.visible and pane.pending is not None
                                     and pane.pending.escalation.run_id == h.id)
            drawn = await settled(frame, "the pane showing the new escalation")
            shown.append(drawn - raised_at[pane.pending.escalation.id])
            decided = asyncio.get_running_loop().create_future()
            unsubscribe = session.subscribe_runs(decision_seen(handle.id, decided))
            await until(lambda: pane.has_focus_within)  # the pane takes the keyboard after its first frame
            t = press(app, "1")
            resumed.append(await settled(decided, "the decision event") - t)
            unsubscribe()
            await until(lambda: handle.finished_at is not None)
        still_busy = sum(1 for r in runs if r.finished_at is None)
        slices = asyncio.get_running_loop().slices
        for r in runs:
            r.cancel()
        await asyncio.wait([asyncio.ensure_future(r.wait()) for r in runs], timeout=30)  # unwound before DBOS stops
        session.close()
    report(f"escalation raised -> pane on screen ({busy_runs} runs busy, {still_busy} still running at the end, "
           f"{slices} slices of run work)", shown)
    report(f"key -> agent resumed ({busy_runs} runs busy)", resumed)


async def many_pending(folder: Path, paths: dict[str, Path], runs_count: int) -> None:
    session = ConsoleSession([WorkflowEntry(paths["fan"], paths["fan"].with_suffix(".yaml"))],
                             rules=default_rules(), clock=RealClock(), workspace=folder, db_url=db_url(folder, "fan.db"))
    app = EscalateApp(session)
    total = runs_count * 4
    async with app.run_test(size=(120, 40)):
        probe = FrameProbe(app)
        await until(app.engine_ready.is_set)
        t0 = time.perf_counter()
        handles = [app.start(session.workflows[0], RunRequest(None, "fan")) for _ in range(runs_count)]
        await until(lambda: len(session.pending()) == total, timeout=300)
        print(f"{total} pending decisions from {runs_count} runs raised in {time.perf_counter() - t0:.1f} s")
        await asyncio.sleep(0.3)
        pane = app.main.query_one(DecisionPane)
        navigation = []
        for _ in range(50):
            before = pane.pending.escalation.id
            frame = probe.next_frame(lambda b=before: pane.pending is not None and pane.pending.escalation.id != b)
            t = press(app, "right_square_bracket")
            navigation.append(await settled(frame, "the next decision after ]") - t)
        expected: dict[tuple[str, str], str] = {}
        answers = []
        for n in range(total):
            esc = pane.pending.escalation
            choice = 1 + n % 3
            expected[(esc.run_id, esc.agent)] = f"opt{choice}"
            frame = probe.next_frame(lambda e=esc.id: pane.pending is None or pane.pending.escalation.id != e)
            t = press(app, str(choice))
            answers.append(await settled(frame, "the pane after an answer") - t)
        await until(lambda: all(h.finished_at is not None for h in handles), timeout=300)
        session.close()
    wrong = 0
    for handle in handles:
        got = dict(part.split("=") for part in str(handle.result).split())
        for agent, option in got.items():
            wrong += expected.get((handle.id, agent)) != option
    report(f"`]` on a queue of {total} -> screen update", navigation)
    report(f"answer key -> screen update ({total} pending, {runs_count} runs)", answers)
    print(f"answers reaching the wrong agent: {wrong} of {total}; runs done: "
          f"{sum(h.status.value == 'done' for h in handles)} of {runs_count}")


def main() -> None:
    if "--no-first-frame" not in sys.argv:
        first_frame(4 if QUICK else 15)
    print(f"runs {'durable (SQLite)' if DURABLE else 'in memory'}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_workspace(folder, busy_calls=60 if QUICK else 200)
        # The loop `escalate` runs the console on (EscalateApp.run).
        with asyncio.Runner(loop_factory=PriorityLoop) as runner:
            runner.run(busy_and_escalating(folder, paths, busy_runs=20, asks=10 if QUICK else 30))
        with asyncio.Runner(loop_factory=PriorityLoop) as runner:
            runner.run(many_pending(folder, paths, runs_count=50))


if __name__ == "__main__":
    main()
