"""The figures behind the private attributes of other libraries we keep (issue 23). Prints numbers.

    python tests/benchmarks/bench_private_attrs.py

1. PriorityLoop's slice check reads asyncio's `_ready`/`_scheduled`: how late a console timer
   (a frame at 120 fps) fires while 20 runs keep the loop busy with ~0.2 ms steps, with that
   check and with only what the loop's public overrides see (console call_soon's).
2. EventLog and RowTable call Textual's `_scroll_update` when their line count changes: its
   cost against a layout of the main screen, what the public `virtual_size` reactive causes.
"""

from __future__ import annotations

import asyncio
import contextvars
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository, for tests.tui.helpers

from engine.runtime.priority_loop import BACKGROUND, PriorityLoop

FRAMES = 600


async def _busy_run(stop: asyncio.Event) -> None:
    BACKGROUND.set(True)
    while not stop.is_set():
        end = time.perf_counter() + 0.0002
        while time.perf_counter() < end:
            pass
        await asyncio.sleep(0)


async def _frame_lateness() -> list[float]:
    stop = asyncio.Event()
    runs = [asyncio.create_task(_busy_run(stop), context=contextvars.copy_context()) for _ in range(20)]
    loop = asyncio.get_running_loop()
    late = []
    for _ in range(FRAMES):
        fired: asyncio.Future[float] = loop.create_future()
        when = loop.time() + 1 / 120
        loop.call_at(when, lambda f=fired: f.set_result(loop.time()))
        late.append((await fired) - when)
    stop.set()
    await asyncio.gather(*runs)
    return late


def timers() -> None:
    original = PriorityLoop._console_due
    variants = {"with asyncio's _ready/_scheduled": original,
                "public view only": lambda self: self._foreground_ready}
    for _ in range(2):
        for name, check in variants.items():
            PriorityLoop._console_due = check  # type: ignore[method-assign]
            try:
                with asyncio.Runner(loop_factory=PriorityLoop) as runner:
                    ms = sorted(x * 1000 for x in runner.run(_frame_lateness()))
            finally:
                PriorityLoop._console_due = original  # type: ignore[method-assign]
            print(f"frame timer lateness, {name}: p50 {statistics.median(ms):.2f} ms, "
                  f"p95 {ms[int(0.95 * len(ms))]:.2f} ms, max {ms[-1]:.2f} ms ({FRAMES} frames, 20 busy runs)")


async def _layout_against_scroll_update(pending_count: int) -> None:
    from tests.tui.helpers import SIZE, ask, make_app, make_session, pending, settle
    from tests.tui.test_widgets import _log_events
    from tui.widgets.event_log import EventLog

    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        log = app.main.query_one(EventLog)
        log.show_run("r1", _log_events(100))
        for i in range(pending_count):
            ask(app.session, pending(app.session.clock, run_id=f"r{i % 50}"))
        await settle(pilot, 10)
        layout, update = [], []
        for _ in range(200):
            t = time.perf_counter()
            app.main._refresh_layout()
            layout.append(time.perf_counter() - t)
            t = time.perf_counter()
            log._scroll_update(log.virtual_size)
            update.append(time.perf_counter() - t)
    print(f"{pending_count} pending: a layout of the main screen median {statistics.median(layout) * 1000:.2f} ms; "
          f"_scroll_update median {statistics.median(update) * 1000:.3f} ms (200 each)")


def scroll_updates() -> None:
    for count in (0, 200):
        asyncio.run(_layout_against_scroll_update(count))


if __name__ == "__main__":
    timers()
    scroll_updates()
