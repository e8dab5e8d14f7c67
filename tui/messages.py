"""Messages that carry engine and broker happenings onto the app's message queue.

Broker and engine callbacks run synchronously inside the run's code; they only post one of
these (cheap and thread-safe) and the app updates its widgets when it handles it.
"""

from __future__ import annotations

from typing import Any

from textual.message import Message

from engine.escalation.broker import BrokerEvent


class BrokerChanged(Message):
    """An escalation was raised, resolved or withdrawn."""

    def __init__(self, event: BrokerEvent) -> None:
        super().__init__()
        self.event = event


class RunEventPosted(Message):
    """A run emitted one of the contract's events."""

    def __init__(self, event: Any) -> None:
        super().__init__()
        self.event = event


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
