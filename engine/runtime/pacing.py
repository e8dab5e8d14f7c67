"""Runs leave room for the console when they saturate the CPU.

Real models keep runs waiting on the network, so a loop shared with a UI stays mostly idle. A
scripted model answers at once: twenty such runs keep the loop's ready queue full, and every
hop of a frame or a key (a message, a refresh, a timer) waits behind all of them. Every model
step (an ADK before-model callback) starts with `Pacer.turn()`: when the runs' thread has been busy for most of the last
quantum, runs wait for a short breath, in which the loop serves only the UI. Runs that wait on
real models never come near the threshold and are never held. The UI may also `hold()` the
runs for a moment: a key being handled or a decision being drawn comes before agent work.
"""

from __future__ import annotations

import asyncio
import time
from typing import Callable

QUANTUM = 0.02  # seconds of wall time between two looks at the CPU
SATURATED = 0.8  # share of the quantum spent on the CPU that counts as saturation
BREATH = 0.02  # seconds in which runs hold back once saturated
HOLD = 0.05  # seconds a UI's hold lasts: about the time to handle a key and draw its frame


class Pacer:
    def __init__(
        self,
        quantum: float = QUANTUM,
        saturated: float = SATURATED,
        breath: float = BREATH,
        *,
        wall: Callable[[], float] = time.perf_counter,
        cpu: Callable[[], float] = time.thread_time,  # the CPU time of the thread running the runs
    ) -> None:
        self._quantum, self._saturated, self._breath = quantum, saturated, breath
        self._now, self._cpu_now = wall, cpu
        self._wall = wall()
        self._cpu = cpu()
        self._resume_at = 0.0
        self.breaths = 0  # how many times runs held back (benchmarks report it)

    def hold(self, seconds: float = HOLD) -> None:
        """No model step starts in the next `seconds` (steps already going finish)."""
        self._resume_at = max(self._resume_at, self._now() + seconds)

    def release(self) -> None:
        """Runs go on now (an answer: the agent that asked must not wait)."""
        self._resume_at = 0.0

    async def turn(self) -> None:
        """Called before each model step: returns at once, unless the runs must breathe."""
        now = self._now()
        elapsed = now - self._wall
        if elapsed >= self._quantum:
            cpu = self._cpu_now()
            if now >= self._resume_at and (cpu - self._cpu) / elapsed >= self._saturated:
                self._resume_at = now + self._breath
                self.breaths += 1
            self._wall, self._cpu = now, cpu
        if now < self._resume_at:
            await asyncio.sleep(self._resume_at - now)
