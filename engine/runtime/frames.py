"""The chain of agent calls in progress, carried in a context variable.

ADK runs tools and sub-agents inside the task that iterates the runner, so a `use` child or an
`escalate_to_agent` target sees its caller's frame: that is how a prompt-level escalation deep
in the hierarchy reaches the `run` statement that started it, and how time spent waiting for a
human is kept out of every enclosing agent timeout (engine/runtime/human.py).
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.escalation.desk import ToolVerdict


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
    # Tool calls paused for a person's confirmation, by call id: the verdict each got (human.py).
    verdicts: "dict[str, ToolVerdict]" = field(default_factory=dict)

    def mark_escalated(self) -> None:
        """Propagate a prompt-level escalation to every caller up the chain."""
        frame: CallFrame | None = self
        while frame is not None:
            frame.escalated = True
            frame = frame.parent


CURRENT: ContextVar[CallFrame | None] = ContextVar("escalate_call_frame", default=None)


def current() -> CallFrame | None:
    return CURRENT.get()


def timeout_scope(seconds: float | None) -> Any:
    return asyncio.timeout(seconds) if seconds else asyncio.timeout(None)
