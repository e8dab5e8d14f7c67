"""Messages for the rare happenings (a run ends, the engine is ready or broken). The frequent
ones (run events, broker changes) go through tui.bridge.Batcher instead."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class RunFinished(Message):
    def __init__(self, handle: Any) -> None:
        super().__init__()
        self.handle = handle


class EngineReady(Message):
    """The runtime is imported and every workflow compiled."""


class EngineFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error
