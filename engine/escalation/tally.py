"""How many pending escalations share a key (e.g. the batch's likeness), kept current by the
broker as escalations come and go, so that asking costs one lookup, not a pass over them all
(10,000 pending made each answer in the console a pass over 10,000)."""

from __future__ import annotations

from collections import Counter
from typing import Callable, Hashable, Iterable

from engine.kernel.model import PendingEscalation

Key = Callable[[PendingEscalation], Hashable]


class Tally:
    """Counts by `key` of what `source()` lists. Built at the first `count` (nobody may ever
    ask: then nothing is computed), kept current from then on through `added` and `removed`,
    which the owner of the list calls for every change."""

    def __init__(self, key: Key, source: Callable[[], Iterable[PendingEscalation]]) -> None:
        self.key = key
        self._source = source
        self._counts: Counter[Hashable] | None = None

    def count(self, pending: PendingEscalation) -> int:
        """How many listed share `pending`'s key (itself included when listed)."""
        if self._counts is None:
            self._counts = Counter(self.key(p) for p in self._source())
        return self._counts[self.key(pending)]

    def added(self, pending: PendingEscalation) -> None:
        if self._counts is not None:
            self._counts[self.key(pending)] += 1

    def removed(self, pending: PendingEscalation) -> None:
        if self._counts is None:
            return
        key = self.key(pending)
        left = self._counts[key] - 1
        if left > 0:
            self._counts[key] = left
        else:
            del self._counts[key]
