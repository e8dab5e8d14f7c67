"""Workflow handlers (`on|after start|input|output|tool-call|tool-result do ... end`).

A handler runs with the message in flight as `$input`, `$output`, `$tool`/`$args` or `$result`
(and `$message` for any of them); in it `mask NAME` rewrites that message, `block if c` refuses
it, `warn` logs, and `retry with e if c` (output) asks the agent again with `e`. `retry step e`
ends the handler and has the step done again with `e`: the agent gets `e` as its input (input),
as the refused tool call's result (tool-call, the tool does not run), instead of the tool's
result (tool-result), or as a new message asking it again (output). Top-level handlers apply to
every agent, an agent's own handlers to it; `on` handlers run before `after`. Agent calls made
inside a handler do not run the handlers again (an `after output` handler that runs an agent
would otherwise handle that agent's output too, without end).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.flow.flow_api import FlowError
from engine.flow.spec import AgentSpec, HandlerSpec

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState


_HANDLING: ContextVar[bool] = ContextVar("escalate_handling", default=False)


class GuardrailBlocked(FlowError):
    """A `block if` handler refused the message (the agent call fails)."""


@dataclass
class HandlerScope:
    """What the handlers of one message can see and change."""

    event: str
    agent: str | None
    subject: Any  # the message in flight, rewritten by `mask`
    blocked: str | None = None
    warnings: list[str] = field(default_factory=list)
    retry_with: Any = None
    retry_step: str | None = None  # `retry step e`: the step is done again with this text


def handlers_for(run: "RunState", spec: AgentSpec | None, event: str) -> list[HandlerSpec]:
    found = [h for h in run.workflow.HANDLERS if h.event == event]
    if spec is not None:
        found += [h for h in spec.handlers if h.event == event]
    return sorted(found, key=lambda h: 0 if h.timing == "on" else 1)


async def run_handlers(
    run: "RunState", spec: AgentSpec | None, event: str, values: dict[str, Any], *, subject: Any
) -> HandlerScope:
    """Run the matching handlers over one message; returns the (maybe rewritten) outcome."""
    scope = HandlerScope(event, spec.name if spec else None, subject)
    selected = handlers_for(run, spec, event)
    if not selected or run.context is None or _HANDLING.get():
        return scope
    handling = _HANDLING.set(True)  # seen by the agent calls the handlers make (same task)
    try:
        for handler in selected:
            await run.context.run_handler(handler, scope, values)
            if scope.blocked or scope.retry_step is not None:
                break
    finally:
        _HANDLING.reset(handling)
    retry = scope.retry_step if event == "output" and scope.retry_step is not None else scope.retry_with
    if retry is not None:
        from engine.runtime.frames import current

        frame = current()
        if frame is not None:
            frame.retry_with = retry
    return scope


async def handled_output(run: "RunState", spec: AgentSpec, text: str) -> str:
    """An agent's reply through its output handlers: the text to use (a mask rewrites it); a
    `block if` raises GuardrailBlocked; a `retry with` is left on the call frame."""
    outcome = await run_handlers(run, spec, "output", {"output": text}, subject=text)
    if outcome.blocked:
        raise GuardrailBlocked(f"output of agent {spec.name!r} blocked: {outcome.blocked}")
    return text if outcome.subject == text else str(outcome.subject)
