"""An event loop on which a console's work comes before the runs' work (and, in `escalate worker`,
the escalations' work: raising one, hearing its answer, before the other runs' steps).

A console shares its loop with the runs it shows. Scripted (or fast) models answer at once, so
twenty runs keep the loop's ready queue full: a plain loop runs every ready callback in arrival
order, and each hop of a key or a frame (a message, a refresh, a timer) waits behind a step of
every run. This loop keeps the runs' callbacks in a queue of their own and serves it in slices,
one slice per loop turn, after everything else that is ready. A slice ends after `SLICE`
seconds, or as soon as the console has something to do (a key from the terminal's thread, a
message posted by a run, a timer due such as the next frame): the console's hops wait for one
run step at most, and runs get whatever time the console leaves, but for a whole slice once
their slices were cut short for `FLOOR` seconds (a console always busy never starves them).

A callback belongs to the runs when its context says so (`BACKGROUND`, which the engine sets in
every run's task, so the tasks and futures a run creates inherit it, and clears while a run
waits for a human, so an answer wakes it at once). On any other loop the mark does nothing.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections import deque
from typing import Any, Callable

BACKGROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("escalate_background", default=False)
SLICE = 0.004  # seconds of run work per loop turn when the console has nothing to do
# However busy the console, runs get a whole slice at least this often: with 20 ACP agents
# streaming, the console always had a frame due, runs got one callback a loop turn, and their
# permission requests waited 2-3 s to be read, answers 300-500 ms to reach them (0.1 s and 50 ms
# with it; bench_acp.py --console --agents 20). 20 ms took 30 ms more to show a decision among
# 20 busy runs (bench_console.py); 50 ms, none measured.
FLOOR = 0.05

_Queued = tuple[asyncio.Handle, Callable[..., Any], tuple[Any, ...], contextvars.Context]


class PriorityLoop(asyncio.SelectorEventLoop):
    def __init__(self, slice_seconds: float = SLICE, floor_seconds: float = FLOOR) -> None:
        super().__init__()
        self._slice = slice_seconds
        self._floor = floor_seconds
        self._cut_since: float | None = None  # since when every slice was cut short by the console
        self._background: deque[_Queued] = deque()
        self._pump_scheduled = False
        self._foreground_ready = False  # the console has work in this loop turn
        self.slices = 0  # how many slices ran (benchmarks report it)

    def call_soon(
        self, callback: Callable[..., Any], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        if context is None:
            context = contextvars.copy_context()
        if not context.get(BACKGROUND):
            self._foreground_ready = True
            return super().call_soon(callback, *args, context=context)
        # The handle is what callers may cancel; the queue runs the callback unless they did.
        handle = asyncio.Handle(callback, args, self, context)
        self._background.append((handle, callback, args, context))
        if not self._pump_scheduled:
            self._pump_scheduled = True
            super().call_soon(self._pump)
        return handle

    def call_soon_threadsafe(
        self, callback: Callable[..., Any], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        self._foreground_ready = True  # a key from the terminal's thread, a thread's result
        return super().call_soon_threadsafe(callback, *args, context=context)

    def _console_due(self) -> bool:
        """Console work waits in asyncio's own queue (runs' work is in ours), or a timer of its
        (the next frame, a countdown) is due. Timers reach that queue when the loop turns,
        without a call_soon to see.

        asyncio's private `_ready` and `_scheduled` (no public call tells what is ready or due):
        what the overrides see alone (console call_soon's) misses due timers and I/O callbacks.
        Measured (tests/benchmarks/bench_private_attrs.py, 20 busy runs, 600 frames, a loaded
        2-core host, 4 runs each): a 120 fps frame timer fired p50 7-19 ms / p95 35-59 ms late
        with them, p50 15-42 ms / p95 43-93 ms without."""
        scheduled = self._scheduled  # asyncio's heap of TimerHandles, earliest first
        return bool(self._ready) or (bool(scheduled) and scheduled[0].when() <= self.time())

    def _pump(self) -> None:
        """One slice of run work; the next slice goes behind whatever became ready meanwhile."""
        self.slices += 1
        queue = self._background
        # Console work scheduled since the last slice sits in this loop turn too: this slice
        # then runs one step (runs always move on) and lets it go first.
        console_waiting, self._foreground_ready = self._foreground_ready, False
        start = time.perf_counter()
        end = start + self._slice
        whole = self._cut_since is not None and start - self._cut_since >= self._floor  # runs starved: theirs now
        cut = False
        while queue:
            handle, callback, args, context = queue.popleft()
            if handle.cancelled():
                continue
            try:
                context.run(callback, *args)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # what asyncio's own handles do with a failing callback
                self.call_exception_handler({"message": f"Exception in callback {callback!r}", "exception": exc, "handle": handle})
            if time.perf_counter() >= end:
                break
            if not whole and (console_waiting or self._console_due()):
                cut = True
                break
        if not cut:
            self._cut_since = None
        elif self._cut_since is None:
            self._cut_since = start
        if queue:
            super().call_soon(self._pump)
        else:
            self._pump_scheduled = False
