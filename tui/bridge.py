"""From engine callbacks to the UI, in batches.

The broker and the engine call their subscribers synchronously, inside a run's code, often
hundreds of times a second. Posting one Textual message per call queues them in front of the
user's keys; instead each call lands in a `Batcher` and the UI handles everything that arrived
in one go, on the app's loop, in the app's context.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


class Batcher(Generic[T]):
    def __init__(self, deliver: Callable[[list[T]], None], delay: float | None = 0.0,
                 defer: Callable[[T], bool] | None = None) -> None:
        self._deliver = deliver
        # None: at once, inside the caller (decisions: not one loop turn later); 0: next loop
        # turn; > 0: coalesce a burst (run events).
        self._delay = delay
        # With delay None, items `defer` says yes to wait for the next loop turn (thousands
        # listed in one turn: one delivery); any other item delivers them all, in order, at once.
        self._defer = defer
        self._items: list[T] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._context: contextvars.Context | None = None
        self._thread = 0
        self._scheduled = False
        self._delivering = False

    def bind(self, loop: asyncio.AbstractEventLoop, context: contextvars.Context) -> None:
        """Start delivering (items that came before are delivered now)."""
        self._loop, self._context, self._thread = loop, context, threading.get_ident()
        if self._items:
            self._schedule()

    def __call__(self, item: T) -> None:
        if self._loop is not None and threading.get_ident() != self._thread:
            self._loop.call_soon_threadsafe(self, item)  # a callback from another thread
            return
        self._items.append(item)
        if self._loop is None:
            return  # not bound yet: delivered by bind()
        if self._delay is None and not self._delivering and not (self._defer is not None and self._defer(item)):
            self._delivering = True
            try:  # in the app's context (Textual's active app), whatever task called us
                assert self._context is not None
                self._context.run(self.flush)
            finally:
                self._delivering = False
        elif not self._scheduled:
            self._schedule()

    def _schedule(self) -> None:
        assert self._loop is not None
        self._scheduled = True
        if self._delay is None:
            self._loop.call_soon(self.flush, context=self._context)
        elif self._delay:
            self._loop.call_later(self._delay, self.flush, context=self._context)
        else:
            self._loop.call_soon(self.flush, context=self._context)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Items that arrive inside are delivered together on leaving (a batch of 50 decisions:
        one redraw, not 50)."""
        was, self._delivering = self._delivering, True
        try:
            yield
        finally:
            self._delivering = was
            if not was and self._loop is not None:
                assert self._context is not None
                self._context.run(self.flush)

    def flush(self) -> None:
        """Deliver what has arrived now (a scheduled delivery then finds nothing)."""
        self._scheduled = False
        items, self._items = self._items, []
        if items:
            self._deliver(items)
