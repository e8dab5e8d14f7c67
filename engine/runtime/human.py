"""Where a run waits for a person: `wait`, the one function every wait of a run goes through,
and the decisions that need it.

Who waits here: an agent's escalation JSON and the ask_human tool (agent_call, through
`decide`), a flow's `escalate to human` and a budget warning (through `run.decide`, which is
`decide`), a tool call the rules send to a person (`settle_tool`, when agent_call answers the
agent's confirmation pause with `confirmation_answer`), and the waits of agent calls run inside
a tool (child_calls), handed up level by level to the flow's level, which does them.

A tool call gets one verdict from the rules (engine/escalation/desk.py `ToolVerdict`): the
callbacks compute it before the tool runs; a call a person must confirm pauses its agent on
ADK's confirmation request, the verdict is kept on the agent call's frame under the call's id
(`hold_verdict`) and settled here when the pause is answered: never computed again.
"""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Protocol, TypeVar

from engine.escalation.desk import Gate, ToolCallOutcome, ToolVerdict
from engine.flow.flow_api import FlowError, StopTask
from engine.kernel.model import Decision, Escalation
from engine.runtime.frames import CallFrame, current
from engine.runtime.priority_loop import BACKGROUND

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

T = TypeVar("T")
Wait = Callable[[], Awaitable[Any]]  # makes the coroutine that waits for a person


class HandsUp(Protocol):
    """A level that does the waits of the agent calls below it (child_calls.ChildCall)."""

    async def hand_up(self, make: Wait) -> Any: ...


# Set inside a child call's task: where its waits go instead of happening there.
_UP: ContextVar[HandsUp | None] = ContextVar("escalate_waits_go_to", default=None)


@contextmanager
def waits_handed_to(level: HandsUp) -> Iterator[None]:
    """Tasks created inside this block hand their waits to `level` (they copy the context)."""
    token = _UP.set(level)
    try:
        yield
    finally:
        _UP.reset(token)


async def wait(run: "RunState", make: Callable[[], Awaitable[T]]) -> T:
    """THE wait for a person. Inside a child call it is handed to the level above; at the flow
    level the run shows as waiting and enclosing agent timeouts stop while the person thinks (a
    person thinking is not an agent hanging): each resumes with the time it had left."""
    level = _UP.get()
    awaitable: Awaitable[T] = level.hand_up(make) if level is not None else make()
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


async def decide(run: "RunState", escalation: Escalation) -> Decision:
    """The desk's decision on an escalation (a rule at once, or a person through `wait`); a
    decision that stops the task raises StopTask."""
    decision = await wait(run, lambda: run.desk.decide(escalation))
    if decision.stops_task:
        raise StopTask(f"escalation {escalation.id} ({escalation.reason.value}) stopped the task: "
                       f"{decision.note or decision.resolved_by.value}")
    return decision


async def settle_tool(run: "RunState", agent: str, tool: str, args: dict[str, Any], verdict: ToolVerdict) -> ToolCallOutcome:
    """What the call's one verdict makes of it: at once, or after a person when it says ASK.
    A verdict (or an edit) that stops the task raises StopTask."""

    def settle() -> Awaitable[ToolCallOutcome]:
        return run.desk.settle_tool(run.run_id, run.task, agent, tool, dict(args), verdict)

    outcome = await (wait(run, settle) if verdict.gate is Gate.ASK else settle())
    if outcome.stops:
        raise StopTask(outcome.message or f"a rule stopped the task at the call to {tool}")
    return outcome


def hold_verdict(call_id: str, verdict: ToolVerdict) -> None:
    """Keep the verdict of a call that pauses for a person's confirmation, for
    `confirmation_answer` (the agent call that pauses is the one that answers the pause)."""
    _frame().verdicts[call_id] = verdict


async def confirmation_answer(run: "RunState", agent: str, request: dict[str, Any]) -> dict[str, Any]:
    """The answer to a paused `adk_request_confirmation` call (its arguments are `request`): the
    paused call's held verdict settled by a person. ADK then calls the tool again with this
    answer in `tool_context.tool_confirmation` (callbacks reads it)."""
    original = request.get("originalFunctionCall")
    original = original if isinstance(original, dict) else {}
    verdict = _frame().verdicts.pop(str(original.get("id")), None)
    tool = str(original.get("name", "tool"))
    if verdict is None:  # only our own gate asks for confirmations, and it holds a verdict first
        raise FlowError(f"agent {agent!r} asked to confirm a call to {tool!r} that no rule checked")
    outcome = await settle_tool(run, agent, tool, dict(original.get("args") or {}), verdict)
    payload: dict[str, Any] = {"message": outcome.message}
    if outcome.args is not None:
        payload["args"] = outcome.args  # approved with edited arguments: the tool runs with these
    return {"confirmed": outcome.runs, "payload": payload}


def _frame() -> CallFrame:
    frame = current()
    if frame is None:  # tools run only inside an agent call (agent_call.call_agent sets it)
        raise FlowError("a tool call outside an agent call")
    return frame


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
