"""The chain of agent calls in progress, carried in a context variable.

ADK runs tools and sub-agents inside the task that iterates the runner, so a `use` child or an
`escalate_to_agent` target sees its caller's frame: that is how a prompt-level escalation deep
in the hierarchy reaches the `run` statement that started it, and how time spent waiting for a
human is kept out of every enclosing agent timeout.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, TypeVar

from engine.runtime.priority_loop import BACKGROUND

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

T = TypeVar("T")


@dataclass
class CallFrame:
    agent: str
    parent: "CallFrame | None" = None
    escalated: bool = False
    timeout: "asyncio.Timeout | None" = None  # the agent's timeout policy, if any
    escalation_chain: tuple[str, ...] = ()  # agents whose escalate_to_agent led here, oldest first
    texts: dict[str, str] = field(default_factory=dict)  # author -> its last reply text
    last_author: str | None = None  # who gave the latest reply (a delegate may answer)
    retry_with: Any = None  # set by an output handler's `retry with e if c`

    def mark_escalated(self) -> None:
        """Propagate a prompt-level escalation to every caller up the chain."""
        frame: CallFrame | None = self
        while frame is not None:
            frame.escalated = True
            frame = frame.parent


CURRENT: ContextVar[CallFrame | None] = ContextVar("escalate_call_frame", default=None)


def current() -> CallFrame | None:
    return CURRENT.get()


async def wait_for_human(run: "RunState", awaitable: Awaitable[T]) -> T:
    """Await a human decision: the run shows as waiting, and enclosing agent timeouts are
    pushed back by the time spent waiting (a person thinking is not an agent hanging)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    run.on_waiting(True)
    # The answer wakes this task ahead of other runs' work (on a console's PriorityLoop): the
    # person who answered sees the agent go on at once.
    foreground = BACKGROUND.set(False)
    try:
        return await awaitable
    finally:
        BACKGROUND.reset(foreground)
        run.on_waiting(False)
        waited = loop.time() - started
        frame = current()
        while frame is not None:
            if frame.timeout is not None and frame.timeout.when() is not None:
                frame.timeout.reschedule(frame.timeout.when() + waited)  # type: ignore[operator]
            frame = frame.parent


def timeout_scope(seconds: float | None) -> Any:
    return asyncio.timeout(seconds) if seconds else asyncio.timeout(None)
