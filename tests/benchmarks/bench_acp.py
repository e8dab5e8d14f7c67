"""ACP permission latency: the scripted ACP agent (tests/acp/scripted_agent.py, a real process
over real pipes) asks N permissions in one turn; each is answered by a "person" (a broker
subscriber that answers as soon as it sees the escalation).

Run: PYTHONPATH=. python tests/benchmarks/bench_acp.py [--n 200] [--agents 1]   (prints figures)

Figures (CLOCK_MONOTONIC, which every process on the machine shares):
- requested -> raised: the agent stamps the request just before sending it; the escalation is
  raised on the broker (what the console's pane and `serve` subscribe to; the pane draws it on
  its next frame). Target p95 < 50 ms.
- answered -> told: `broker.answer` is called; the agent has the reply (its option) in hand.
  Target p95 < 50 ms.
With --agents K, K agents run at once in one engine (one loop), each asking N permissions.

--console [--agents 20]: the agents run in one console (Textual's App under run_test, headless,
120x40, on the PriorityLoop `escalate` runs it on; --plain-loop: asyncio's own, as before), each streaming lines, thoughts and tool calls between its permission requests (stamped
by the agent); the person answers from the pane with the key `1` (Allow once) as soon as it is
on screen. Figures, per request: requested -> the first frame showing it (in the pane when the
pane was empty: every request with one agent; else as an inbox row), split into requested ->
raised and raised -> in the pane; the key -> the agent has its option; the key -> the screen
updated (the next request, or the pane gone); the console's CPU between key and screen, and the
rest (waiting: for a core, which the agents' processes and the host's load take, or for the next
frame's tick).
The machine is shared: the load average is printed with the figures. Counted, which the load
does not distort: per request, the console's CPU (this process: the ACP client and the frames),
frames sent, layout passes of the screen (compositor reflows) and widget renders, by widget.
Also the console's CPU per frame drawn (thread time, median and p95: what the load inflates
least); per key, between it and the screen: frames, layout passes and lines drawn anew (a line
not served from a widget's line cache: what a frame's cost follows), by widget; and the cyclic
collector's passes in those windows and in the whole run (a full pass is the rare slow key). --profile prints where the console's own work goes (cProfile of its frames, broker and
run news and the pane's key; the agents' ACP traffic left out), sorted by internal time.
--nice N: the lowest the agents' processes go below the console's priority ($ESCALATE_ACP_NICE;
0: as the console; unset: escalate's default, 10; engine/runtime/acp/priority.py), named in the
first line of the figures.
Old against new: `git archive OLD | tar -x -C /tmp/old`, copy this file there, run both in turn.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.runtime.acp.workflow import agent_source  # noqa: E402
from engine.escalation.broker import EscalationBroker  # noqa: E402
from engine.kernel.clock import RealClock  # noqa: E402
from engine.kernel.model import Response, ResponseType  # noqa: E402
from engine.runtime.engine import Engine  # noqa: E402
from engine.runtime.run_status import RunStatus  # noqa: E402
from rules.loader import default_rules  # noqa: E402
from tests.acp.conftest import agent_command  # noqa: E402

OPTIONS = [["allow-1", "Allow once", "allow_once"], ["no-1", "Reject", "reject_once"]]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


async def main(n: int, agents: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-acp-"))
    clock = RealClock()
    broker = EscalationBroker(clock)
    engine = Engine(rules=default_rules(), broker=broker, clock=clock, workspace=tmp)
    raised_ns: dict[str, int] = {}  # escalation id -> when the broker raised it
    sent_ns: dict[str, int] = {}
    answered_ns: list[tuple[str, int]] = []  # (run, when answered), in order per run

    def on_event(event) -> None:
        if event.kind != "raised":
            return
        now = time.monotonic_ns()
        esc = event.pending.escalation
        raised_ns[esc.id] = now
        sent_ns[esc.id] = int(event.pending.extra["args"]["sent_ns"])
        asyncio.get_running_loop().call_soon(answer, esc.id, esc.run_id)

    def answer(esc_id: str, run_id: str) -> None:
        answered_ns.append((run_id, time.monotonic_ns()))
        broker.answer(esc_id, Response(ResponseType.OPTION, selected_option="allow-1"))

    broker.subscribe(on_event)
    handles, traces = [], {}
    for k in range(agents):
        trace = tmp / f"trace-{k}.jsonl"
        script = tmp / f"script-{k}.json"
        steps = [{"permission": {"title": f"deploy {i}", "raw_input": {"n": i}, "options": OPTIONS, "stamp": True}}
                 for i in range(n)]
        script.write_text(json.dumps({"trace": str(trace), "turns": [steps + [{"say": "done"}]]}))
        source = tmp / f"agent-{k}.sr"
        source.write_text(agent_source(agent_command(script)))
        handle = engine.start_run(engine.load(source), input="go", task=f"bench-{k}")
        handles.append(handle)
        traces[handle.id] = trace
    started = time.monotonic()
    for handle in handles:
        status = await handle.wait()
        if status is not RunStatus.DONE:
            raise SystemExit(f"run {handle.id}: {status.value}: {handle.error}")
    wall = time.monotonic() - started
    to_raised = [(raised_ns[e] - sent_ns[e]) / 1e6 for e in raised_ns]
    to_told = []
    for handle in handles:
        told = [t["told_ns"] for t in map(json.loads, traces[handle.id].read_text().splitlines()) if t["event"] == "permission"]
        answered = [ns for run, ns in answered_ns if run == handle.id]
        to_told += [(t - a) / 1e6 for t, a in zip(told, answered)]
    load = os.getloadavg()
    print(f"ACP permissions: {agents} agent(s) x {n} requests, {wall:.1f} s wall; load average {load[0]:.1f} {load[1]:.1f}")
    for name, values in (("requested -> raised on the broker", to_raised), ("answered -> agent told", to_told)):
        print(f"  {name:36s} n={len(values):4d}  median {statistics.median(values):6.2f} ms  "
              f"p95 {p95(values):6.2f} ms  max {max(values):7.2f} ms")


async def console(n: int, agents: int, profile: bool = False) -> None:
    """K ACP agents at once in one console; the person answers from the pane with the key `1`."""
    sys.path.insert(0, str(Path(__file__).parent))
    import tui  # noqa: F401  before Textual, as `escalate` does

    from bench_console import press, settled, until
    from engine.escalation.broker import RAISED
    from tui.app import EscalateApp
    from tui.session import ConsoleSession, RunRequest, WorkflowEntry
    from tui.widgets.decision_pane import DecisionPane
    from tui.widgets.inbox import Inbox

    tmp = Path(tempfile.mkdtemp(prefix="bench-acp-console-"))
    entries, traces = [], []
    for k in range(agents):
        steps: list = []
        for i in range(n):
            steps += [{"think": f"step {i}: reading"}, {"say": f"working on part {i} [of {n}]\n", "chunks": 4},
                      {"tool": {"id": f"t{i}", "title": f"edit file{i}.py", "kind": "edit", "status": "in_progress"}},
                      {"wait": 0.05},
                      {"permission": {"title": f"deploy {k}-{i}", "raw_input": {"n": i}, "options": OPTIONS,
                                      "stamp": True}}]
        script, trace = tmp / f"script-{k}.json", tmp / f"trace-{k}.jsonl"
        script.write_text(json.dumps({"trace": str(trace), "turns": [steps + [{"say": "done"}]]}))
        traces.append(trace)
        source = tmp / f"acp{k}.sr"
        source.write_text(agent_source(agent_command(script)))
        entries.append(WorkflowEntry(source))
    session = ConsoleSession(entries, rules=default_rules(), workspace=tmp)
    profiler = ConsoleProfile() if profile else None
    app = EscalateApp(session)
    total = agents * n
    # CLOCK_MONOTONIC ns, which the agents' stamps use too (perf_counter is the same clock on Linux)
    sent: dict[str, int] = {}  # escalation id -> the agent sent the request
    raised: dict[str, int] = {}  # -> raised on the console's broker
    in_pane: dict[str, int] = {}  # -> the first frame with it in the pane
    on_screen: dict[str, int] = {}  # -> the first frame with it on screen (the pane or an inbox row)
    pane_was_empty: set[str] = set()  # raised while the pane had nothing to show
    raised_cpu: dict[str, float] = {}  # the console's CPU time (s) when raised
    pane_cpu: dict[str, float] = {}  # the console's CPU between raised and the frame with it in the pane
    async with app.run_test(size=(120, 40)):
        counts = RenderCounts(app.main)
        pane = app.main.query_one(DecisionPane)
        inbox = app.main.query_one(Inbox)
        original = app._display  # where each frame leaves for the terminal (bench_console.FrameProbe)
        waiters: list = []

        def display(screen, renderable) -> None:  # noqa: ANN001
            original(screen, renderable)
            if renderable is None:
                return
            now = time.monotonic_ns()
            shown = pane.pending.escalation.id if pane.visible and pane.pending is not None else None
            if shown is not None and shown not in in_pane:
                in_pane[shown] = now
                pane_cpu[shown] = time.process_time() - raised_cpu.get(shown, time.process_time())
            for esc_id in raised:
                if esc_id not in on_screen and (esc_id == shown or esc_id in inbox):
                    on_screen[esc_id] = now
            for waiter in list(waiters):
                check, future = waiter
                if not future.done() and check():
                    future.set_result(now / 1e9)
                    waiters.remove(waiter)

        app._display = display  # type: ignore[method-assign]

        def next_frame(check) -> asyncio.Future[float]:  # noqa: ANN001
            future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
            waiters.append((check, future))
            return future

        def on_raised(event) -> None:  # noqa: ANN001
            if event.kind != RAISED:
                return
            esc = event.pending.escalation
            raised[esc.id] = time.monotonic_ns()
            raised_cpu[esc.id] = time.process_time()
            sent[esc.id] = int(event.pending.extra["args"]["sent_ns"])
            if [p.escalation.id for p in session.broker.pending()] == [esc.id]:  # nothing else to show
                pane_was_empty.add(esc.id)

        await until(app.engine_ready.is_set)
        session.broker.subscribe(on_raised)
        focus_moves: list[object] = []  # each restyles the widgets that gain and lose the keyboard
        app.main.watch(app.main, "focused", lambda widget: focus_moves.append(widget), init=False)
        counts.start()
        cpu_started = time.process_time()
        handles = [app.start(entry, RunRequest(None, "go")) for entry in session.workflows]
        keys, cpu = [], []
        per_key: list[tuple[int, int, int]] = []  # frames, layout passes, lines drawn anew between key and screen
        pressed: dict[str, list[int]] = {}  # run id -> when its requests were answered, in order
        for _ in range(total):
            await until(lambda: pane.visible and pane.pending is not None and pane.pending.escalation.id in in_pane
                        and pane.has_focus_within)
            esc = pane.pending.escalation
            frame = next_frame(lambda e=esc.id: pane.pending is None or pane.pending.escalation.id != e)
            before = counts.tally()
            counts.key_window(True)
            c = time.process_time()
            t = press(app, "1")
            pressed.setdefault(esc.run_id, []).append(int(t * 1e9))
            keys.append((await settled(frame, "the screen after the key") - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)  # this process's CPU: what the load cannot inflate
            counts.key_window(False)
            per_key.append(tuple(after - was for after, was in zip(counts.tally(), before)))  # type: ignore[arg-type]
        await until(lambda: all(h.finished_at is not None for h in handles), timeout=300)
        done = sum(h.status.value == "done" for h in handles)
        counts.stop()
        cpu_total = time.process_time() - cpu_started
        session.close()
    told = []
    for handle, trace in zip(handles, traces):
        told_ns = [t["told_ns"] for t in map(json.loads, trace.read_text().splitlines()) if t["event"] == "permission"]
        told += [(t - a) / 1e6 for t, a in zip(told_ns, pressed.get(handle.id, []))]
    empty = [e for e in in_pane if e in pane_was_empty]
    load = os.getloadavg()
    print(f"ACP agents in one console: {agents} agents x {n} permissions each, {done} of {agents} runs done; "
          f"agents' priority {_niceness()}; load average {load[0]:.1f} {load[1]:.1f}")
    rows = (("requested -> on screen (pane or inbox row)", [(on_screen[e] - sent[e]) / 1e6 for e in on_screen]),
            ("of it: requested -> raised on the broker", [(raised[e] - sent[e]) / 1e6 for e in on_screen]),
            ("of it: raised -> on screen", [(on_screen[e] - raised[e]) / 1e6 for e in on_screen]),
            ("requested -> in the pane (pane was empty)", [(in_pane[e] - sent[e]) / 1e6 for e in empty]),
            ("of it: requested -> raised on the broker", [(raised[e] - sent[e]) / 1e6 for e in empty]),
            ("of it: raised -> in the pane", [(in_pane[e] - raised[e]) / 1e6 for e in empty]),
            ("console CPU between raised and the pane", [pane_cpu[e] * 1000 for e in empty]),
            ("key -> agent told (its option in hand)", told),
            ("key -> screen updated", keys),
            ("console CPU between key and screen", cpu),
            ("key -> screen less that CPU (waiting)", [k - c for k, c in zip(keys, cpu)]))
    for name, values in rows:
        if values:
            print(f"  {name:44s} n={len(values):4d}  median {statistics.median(values):6.2f} ms  "
                  f"p95 {p95(values):6.2f} ms  max {max(values):7.2f} ms")
    print(f"  per request: console CPU {cpu_total * 1000 / total:.1f} ms (agents' processes not counted), "
          f"frames {counts.frames / total:.2f}, layout passes of the screen {counts.layouts / total:.2f}, "
          f"widget renders {sum(counts.renders.values()) / total:.1f}")
    print("  widget renders per request, by widget: " + ", ".join(
        f"{name} {k / total:.1f}" for name, k in counts.renders.most_common()))
    print(f"  per key, between it and the screen: frames {statistics.mean(k[0] for k in per_key):.2f}, layout passes "
          f"{statistics.mean(k[1] for k in per_key):.2f}, lines drawn anew {statistics.mean(k[2] for k in per_key):.1f} "
          f"(p95 {p95([float(k[2]) for k in per_key]):.0f}); of them, by widget: " + ", ".join(
              f"{name} {k / total:.1f}" for name, k in counts.key_lines.most_common()))
    print(f"  focus moves per request: {len(focus_moves) / total:.2f} (to the workflow list "
          f"{sum(type(w).__name__ == 'WorkflowList' for w in focus_moves) / total:.2f}, to none "
          f"{sum(w is None for w in focus_moves) / total:.2f})")
    print(f"  lines drawn anew per request, whole run: {counts.lines / total:.1f}; by widget: " + ", ".join(
        f"{name} {k / total:.1f}" for name, k in counts.all_lines.most_common()))
    def by_generation(passes: list[tuple[int, float]]) -> str:
        return ", ".join(f"generation {g}: {len(ms)} passes, {sum(ms):.0f} ms, longest {max(ms):.1f} ms"
                         for g in (0, 1, 2) if (ms := [m for gg, m in passes if gg == g]))

    print(f"  collector (gc thresholds {gc.get_threshold()}) between key and screen: {by_generation(counts.key_gc) or 'no pass'}; "
          f"during the whole run: {by_generation(counts.all_gc)}")
    frame_cpu = counts.frame_cpu
    print(f"  console CPU per frame drawn: median {statistics.median(frame_cpu):.2f} ms, p95 {p95(frame_cpu):.2f} ms "
          f"(n={len(frame_cpu)})")
    if profiler is not None:
        profiler.report(total)


def _niceness() -> str:
    """The agents' priority, as escalate sets it (the code measured may predate it)."""
    try:
        from engine.runtime.acp.priority import NICE_VARIABLE, agent_niceness
    except ImportError:
        return "as the console's (no $ESCALATE_ACP_NICE in this code)"
    cap = agent_niceness()
    if cap == 0:
        return f"as the console's (${NICE_VARIABLE}=0)"
    return f"the k-th running at once log_1.25(k) nice levels below the console, at most {cap} (${NICE_VARIABLE})"


class ConsoleProfile:
    """cProfile of the console's own work: its frames, the broker's and the runs' news, the
    pane's key and answer (the ACP clients' reading of 20 agents' streams is left out)."""

    def __init__(self) -> None:
        """Before the app is made: it keeps some of these methods as callbacks."""
        import cProfile

        from textual.screen import Screen

        from tui.app import EscalateApp
        from tui.widgets.decision_pane import DecisionPane

        self.profile = cProfile.Profile()
        self._depth = 0
        for owner, name in ((Screen, "_on_timer_update"), (EscalateApp, "_apply_broker_events"),
                            (EscalateApp, "_apply_run_events"), (EscalateApp, "answer"), (DecisionPane, "action_choose")):
            setattr(owner, name, self._profiled(getattr(owner, name)))

    def _profiled(self, method):  # noqa: ANN001, ANN202
        def profiled(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            self._depth += 1
            if self._depth == 1:
                self.profile.enable()
            try:
                return method(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.profile.disable()
        return profiled

    def report(self, requests: int) -> None:
        import pstats

        stats = pstats.Stats(self.profile, stream=sys.stdout)
        # Python calls made: a measure of the console's work that the host's load does not change
        print(f"  the console's own work: {stats.total_calls / requests:,.0f} Python calls per request; "
              "where it went (cProfile, by internal time):")
        stats.sort_stats(os.environ.get("BENCH_SORT", "tottime")).print_stats(int(os.environ.get("BENCH_TOP", "25")))


class RenderCounts:
    """What the console's frames cost, counted (the load cannot inflate a count): layout passes of
    the main screen, frames sent, and each widget's render (its lines drawn for a frame). It wraps
    Textual's internals: a benchmark's probe, not the console's code."""

    def __init__(self, screen) -> None:  # noqa: ANN001
        import gc
        from collections import Counter

        from textual._styles_cache import StylesCache
        from textual.widget import Widget

        self.frames = self.layouts = 0
        self.lines = 0  # lines drawn anew (not from a widget's line cache): what a frame's cost follows
        self.key_lines: Counter[str] = Counter()  # ... between a key and its screen, by widget
        self.all_lines: Counter[str] = Counter()  # ... during the whole run, by widget (a focus move's
        # redraw may fall in the frame after the key's, the next decision's)
        self.key_gc: list[tuple[int, float]] = []  # collector passes (generation, ms of CPU) between a key and its screen
        self.all_gc: list[tuple[int, float]] = []  # ... while counting
        self._in_key = False
        self._gc_started = 0.0
        self.frame_cpu: list[float] = []  # ms of this thread's CPU drawing each frame (not its layout)
        self.renders: Counter[str] = Counter()
        self._screen, self._widget = screen, Widget
        self._on = False
        compositor = screen._compositor
        reflow, render_lines, compositor_refresh = compositor.reflow, Widget.render_lines, screen._compositor_refresh

        def counted_reflow(*args):  # noqa: ANN002  a layout of the whole screen
            if self._on:
                self.layouts += 1
            return reflow(*args)

        def counted_render(widget, crop):  # noqa: ANN001
            if self._on:
                self.renders[type(widget).__name__] += 1
            return render_lines(widget, crop)

        def counted_refresh() -> None:
            if not (self._on and screen is screen.app.screen):
                compositor_refresh()
                return
            self.frames += 1
            started = time.thread_time()
            compositor_refresh()
            self.frame_cpu.append((time.thread_time() - started) * 1000)

        render_line = StylesCache.render_line

        def counted_line(cache, styles, y, size, content_size, padding, base, background, render_content_line, *rest):  # noqa: ANN001, ANN002
            if self._on:
                self.lines += 1
                widget = getattr(render_content_line, "__self__", None)
                name = type(widget).__name__
                if name == "ScrollBar":  # whose
                    name = f"{type(widget.parent).__name__}'s scrollbar"
                self.all_lines[name] += 1
                if self._in_key:
                    self.key_lines[name] += 1
            return render_line(cache, styles, y, size, content_size, padding, base, background, render_content_line, *rest)

        def collector(phase: str, info: dict) -> None:
            if not self._on:
                return
            if phase == "start":
                self._gc_started = time.process_time()
                return
            done = (info["generation"], (time.process_time() - self._gc_started) * 1000)
            self.all_gc.append(done)
            if self._in_key:
                self.key_gc.append(done)

        compositor.reflow = counted_reflow
        screen._compositor_refresh = counted_refresh
        Widget.render_lines = counted_render
        StylesCache.render_line = counted_line
        gc.callbacks.append(collector)
        self._render_lines, self._render_line, self._collector, self._styles_cache = render_lines, render_line, collector, StylesCache

    def start(self) -> None:
        self._on = True

    def tally(self) -> tuple[int, int, int]:
        return self.frames, self.layouts, self.lines

    def key_window(self, inside: bool) -> None:
        self._in_key = inside

    def stop(self) -> None:
        import gc

        self._on = False
        self._widget.render_lines = self._render_lines
        self._styles_cache.render_line = self._render_line
        gc.callbacks.remove(self._collector)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--agents", type=int, default=1)
    parser.add_argument("--console", action="store_true")
    parser.add_argument("--profile", action="store_true", help="with --console: where the console's work goes")
    parser.add_argument("--nice", type=int, metavar="N",
                        help="the lowest the agents' priority goes below the console: sets $ESCALATE_ACP_NICE (0: as the console)")
    parser.add_argument("--plain-loop", action="store_true",
                        help="with --console: asyncio's own loop (the figures before this flag), not the PriorityLoop")
    args = parser.parse_args()
    if args.nice is not None:
        os.environ["ESCALATE_ACP_NICE"] = str(args.nice)
    if args.console:  # on the loop `escalate` runs the console on (EscalateApp.run): runs' work after the console's
        from engine.runtime.priority_loop import PriorityLoop

        with asyncio.Runner(loop_factory=asyncio.new_event_loop if args.plain_loop else PriorityLoop) as runner:
            runner.run(console(args.n, args.agents, args.profile))
    else:
        asyncio.run(main(args.n, args.agents))
