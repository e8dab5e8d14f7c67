"""Injectable time for everything that waits: escalation deadlines, countdowns, agent history.

`RealClock` is the wall clock (epoch seconds): escalation deadlines are stored in the database
and must mean the same in another process or after a restart. `FakeClock` only moves when a
test (or a snapshot) advances it, so deadlines fire deterministically and countdowns are frozen.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Callable, Protocol


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> float:
        """Seconds; RealClock's are epoch seconds, so stored deadlines survive restarts."""

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable:
        """Run `callback` once `now() >= when`; the handle's `cancel()` prevents it."""


class RealClock:
    """Wall time; callbacks run on the asyncio loop (the one running at call time, or the one
    given), because the broker's futures live there."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop

    def now(self) -> float:
        return time.time()

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable:
        loop = self._loop or asyncio.get_running_loop()
        # loop.time() may differ from time.monotonic() in custom loops: schedule by delay.
        return loop.call_later(max(0.0, when - self.now()), callback)


class _FakeTimer:
    __slots__ = ("when", "callback", "cancelled")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that stands still until `advance()`; due callbacks fire in deadline order
    (ties in scheduling order), with `now()` set to each callback's own deadline."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._heap: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> Cancellable:
        timer = _FakeTimer(float(when), callback)
        heapq.heappush(self._heap, (timer.when, next(self._seq), timer))
        return timer

    def advance(self, seconds: float) -> int:
        """Move time forward and fire every callback now due; returns how many fired.
        Callbacks may schedule more; those also fire if due before the new time."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        target = self._now + seconds
        fired = 0
        while self._heap and self._heap[0][0] <= target:
            when, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
            fired += 1
        self._now = target
        return fired

    def pending_timers(self) -> int:
        """Callbacks scheduled and not cancelled (tests check that nothing leaks)."""
        return sum(1 for _, _, t in self._heap if not t.cancelled)
