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
    paused: int = 0  # human waits in progress below this frame (parallel branches may overlap)
    remaining: float | None = None  # the timeout's time left when the first of them began

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
    stopped while a person thinks (a person thinking is not an agent hanging): each resumes
    with the time it had left when the wait began."""
    loop = asyncio.get_running_loop()
    run.on_waiting(True)
    paused = _pause_timeouts(loop.time())
    # The answer wakes this task ahead of other runs' work (on a console's PriorityLoop): the
    # person who answered sees the agent go on at once.
    foreground = BACKGROUND.set(False)
    try:
        return await awaitable
    finally:
        BACKGROUND.reset(foreground)
        run.on_waiting(False)
        _resume_timeouts(paused, loop.time())


def _pause_timeouts(now: float) -> list[CallFrame]:
    frames = []
    frame = current()
    while frame is not None:
        if frame.timeout is not None:
            if frame.paused == 0 and frame.timeout.when() is not None:
                frame.remaining = max(0.0, frame.timeout.when() - now)  # type: ignore[operator]
                frame.timeout.reschedule(None)
            frame.paused += 1
            frames.append(frame)
        frame = frame.parent
    return frames


def _resume_timeouts(frames: list[CallFrame], now: float) -> None:
    for frame in frames:
        frame.paused -= 1
        if frame.paused == 0 and frame.remaining is not None and frame.timeout is not None:
            frame.timeout.reschedule(now + frame.remaining)
            frame.remaining = None


def timeout_scope(seconds: float | None) -> Any:
    return asyncio.timeout(seconds) if seconds else asyncio.timeout(None)
