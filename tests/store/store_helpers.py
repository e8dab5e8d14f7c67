"""Builders for the store tests: a store on a fake clock with a fixed wall time, and lines."""

from __future__ import annotations

import json
from pathlib import Path

from engine.escalation.clock import FakeClock
from engine.escalation.store import HistoryStore

WALL = 1_763_784_000.0  # 2025-11-22T04:00:00Z: the wall time when the test's clock reads 1000


def open_store(path: Path, clock: FakeClock | None = None, wall: float = WALL, release: bool = True) -> HistoryStore:
    """A store whose clock reads `clock.now()` at wall time `wall` (so times are exact), writing
    at once unless `release` is False (then lines are held until `release()`)."""
    store = HistoryStore.open(path, clock or FakeClock(1000.0), wall_now=lambda: wall)
    if release:
        store.release()
    return store


def line(kind: str, at: str = "2025-11-22T04:00:00.000Z", **fields: object) -> str:
    return json.dumps({"v": 1, "kind": kind, "at": at, **fields}) + "\n"


def agent_line(source: str, target: str, approved: bool = True, at: str = "2025-11-22T04:00:00.000Z",
               denial: str | None = None) -> str:
    return line("agent_escalation", at, source=source, target=target, approved=approved,
                reason="needs analysis", task="analyze the session store", denial=denial)
