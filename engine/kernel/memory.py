"""Give a burst's free memory back to the system once a process's runs have parked, and keep
fewer malloc arenas to hold it (issue 26).

A run that parks drops its Python objects, but the memory they lived in stays with the process:
pymalloc frees an arena only when every block in it is free, and glibc keeps freed chunks in its
heaps (the main one and one per thread that allocated). After a burst of runs parks, and nothing
executes here, `gc.collect()` once and glibc's `malloc_trim(0)` hand that memory back. Debounced
(`GiveBack`): once per settled burst, never per park; off the event loop (a thread)."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import sys
from typing import Any, Callable

# A burst has settled when no park came for this long (the parks of one burst come within ms of
# each other; a later park starts the wait again).
SETTLE_SECONDS = 1.0


def _glibc(name: str, argtypes: list[Any]) -> Any:
    """A function of the process's own libc returning an int, or None (not Linux, or a libc
    without it: musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function: Any = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function


_TRIM: Callable[[int], int] | None = _glibc("malloc_trim", [ctypes.c_size_t])
M_ARENA_MAX = -8  # glibc's malloc.h
# glibc gives each thread that allocates an arena of its own, up to 8 per core: DBOS's pool
# threads (EXECUTOR_THREADS) each kept one, with free chunks a trim does not give back. With 4,
# 200 runs parked in one process hold ~8 KB of RSS a run less (glibc's free space 41-45 -> 27-29
# KB a run); with 2, the same RSS and the burst's CPU +13% (its threads wait on arena locks).
ARENAS = 4


def few_arenas() -> bool:
    """Cap glibc's malloc arenas at ARENAS from now on (mallopt, public libc API; call before
    the pool's threads start); whether glibc took it (not Linux/glibc: nothing done)."""
    mallopt = _glibc("mallopt", [ctypes.c_int, ctypes.c_int])
    return mallopt is not None and bool(mallopt(M_ARENA_MAX, ARENAS))


def give_back() -> bool:
    """Collect garbage once, then ask glibc to return its free pages; whether glibc was asked."""
    gc.collect()
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


class GiveBack:
    """Calls `give_back` once after a burst of parks: `parked()` after each park (on the loop);
    SETTLE_SECONDS after the last one, when `busy()` says nothing executes here any more, it runs
    in a thread. A park while it runs asks for one more afterwards."""

    def __init__(self, busy: Callable[[], bool], settle: float = SETTLE_SECONDS,
                 work: Callable[[], Any] = give_back) -> None:
        self.busy = busy
        self.settle = settle
        self.work = work
        self.given = 0  # how many times the memory was given back
        self._timer: asyncio.TimerHandle | None = None
        self._running: asyncio.Task[None] | None = None

    def parked(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(self.settle, self._due)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _due(self) -> None:
        self._timer = None
        if self.busy():  # runs still execute: the next park (or the end of this process) comes later
            return
        if self._running is not None and not self._running.done():
            self.parked()  # parked during a give-back: one more once this burst settles
            return
        self._running = asyncio.get_running_loop().create_task(self._give())

    async def _give(self) -> None:
        await asyncio.to_thread(self.work)
        self.given += 1
