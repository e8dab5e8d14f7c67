"""RunContext: the FlowContext generated flow code runs against (engine/flow/flow_api.py).

Variables are flat per run (engine/runtime/variables.py): each `run FLOW` and each handler sees
the run's one table, in front of which it keeps its own `$input` or message;
parallel branches share their flow's. The current view lives in a context variable, so
concurrent branches that call flows each see their own.
"""

from __future__ import annotations

import asyncio
import json
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from engine.escalation import protocol
from engine.escalation.broker import EscalationError
from engine.kernel.model import Origin
from engine.flow.flow_api import AbortFlow, CallResult, FlowError, RetryStep, StopTask
from engine.runtime.frames import CURRENT, CallFrame, current
from engine.flow.spec import HandlerSpec
from engine.runtime.variables import Variables

if TYPE_CHECKING:
    from engine.runtime.handlers import HandlerScope
    from engine.runtime.run_state import RunState


_FRAME: ContextVar[Variables | None] = ContextVar("escalate_flow_frame", default=None)
_SCOPE: ContextVar["HandlerScope | None"] = ContextVar("escalate_handler_scope", default=None)
_CONTROL = (StopTask, AbortFlow, EscalationError, asyncio.CancelledError)


def as_text(value: Any) -> str:
    """A value as an agent receives it: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class RunContext:
    def __init__(self, run: "RunState", input_text: str) -> None:
        self.run = run
        self.input = input_text
        self.table: dict[str, Any] = {}  # the run's variables
        self.root = Variables(self._own(input_text), self.table)
        self._unknown_guardrails: set[str] = set()  # told once in the log
        _FRAME.set(self.root)

    @staticmethod
    def _own(input_value: Any) -> dict[str, Any]:
        # `$input` and the seeds' `$input_prompt` both name the flow's input.
        return {"input": input_value, "input_prompt": input_value}

    # -- variables ---------------------------------------------------------------------------

    @property
    def vars(self) -> Variables:
        frame = _FRAME.get()
        return frame if frame is not None else self.root

    def get(self, name: str, line: int) -> Any:
        frame = self.vars
        if name not in frame:
            raise FlowError(f"variable ${name} is not set", line)
        return frame[name]

    # -- calls -------------------------------------------------------------------------------

    async def run_agent(self, agent: str, args: list[Any], *, history: Any = None, line: int) -> CallResult:
        spec = self.run.workflow.AGENTS.get(agent)
        if spec is None:
            raise FlowError(f"no agent named {agent!r}", line)
        message = self._message(spec.prompt, args)
        try:
            outcome = await self.run.call_agent(agent, message, history=history)
        except (*_CONTROL, FlowError):
            raise
        except Exception as exc:
            raise FlowError(f"agent {agent!r} failed: {exc}", line) from exc
        if spec.produces:
            self.vars[spec.produces] = outcome.value
        return CallResult(outcome.value, outcome.escalated)

    def _message(self, prompt_name: str | None, args: list[Any]) -> str:
        """The agent's input: its `prompt` body (if any) then the arguments, joined."""
        parts: list[str] = []
        prompt = self.run.workflow.PROMPTS.get(prompt_name or "")
        if prompt is not None and prompt.body is not None:
            parts.append(str(prompt.body(self)))
        parts.extend(as_text(a) for a in args)
        return "\n\n".join(p for p in parts if p != "") if len(parts) > 1 else (parts[0] if parts else "")

    async def run_flow(self, flow: str, args: list[Any], *, line: int) -> CallResult:
        method = self.run.workflow.FLOWS.get(flow)
        if method is None:
            raise FlowError(f"no flow named {flow!r}", line)
        own = self._own(args[0] if len(args) == 1 else (as_text_list(args) if args else self.input))
        frame = Variables(own, self.vars)
        call = CallFrame(f"flow {flow}", current())
        frame_token, call_token = _FRAME.set(frame), CURRENT.set(call)
        try:
            value = await getattr(self.run.workflow, method)(self)
        except RetryStep as exc:
            raise FlowError("`retry step` outside an `on failure` block", exc.line) from None
        finally:
            _FRAME.reset(frame_token)
            CURRENT.reset(call_token)
        return CallResult(value, call.escalated)

    async def call_llm(self, prompt: str, args: list[Any], *, model: str | None, line: int) -> CallResult:
        """`call llm P`: a one-off agent named after the prompt (its key in a --script file)."""
        if prompt not in self.run.workflow.PROMPTS:
            raise FlowError(f"no prompt named {prompt!r}", line)
        key = self.run.register_llm_agent(prompt, model)
        message = self._message(prompt, args)
        try:
            outcome = await self.run.call_agent(key, message)
        except (*_CONTROL, FlowError):
            raise
        except Exception as exc:
            raise FlowError(f"call llm {prompt!r} failed: {exc}", line) from exc
        return CallResult(outcome.value, outcome.escalated)

    async def escalate_to_human(self, message: Any, *, line: int, options: Any = None) -> str:
        """A map with a `question` is seed 004's escalation as the flow writes it (reason,
        context, options, allowAgentDecision, timeout, agent: read as leniently as an agent's);
        anything else is the question. `with options [...]` gives the choices."""
        fields = dict(message) if isinstance(message, dict) and "question" in message else {"question": as_text(message)}
        if options is not None:
            listed = options if isinstance(options, list) else [options]
            # A plain label is its own id too: `escalate answer ID --option staging` works.
            fields["options"] = [{"id": o, "label": o} if isinstance(o, str) else o for o in listed]
        agent = as_text(fields.get("agent") or "flow")
        escalation = protocol.to_escalation(fields, id="", task_id=self.run.task, run_id=self.run.run_id, agent=agent, origin=Origin.FLOW)
        decision = await self.run.decide(escalation)
        return protocol.decision_value(escalation, decision)

    async def log(self, message: Any, *, line: int) -> None:
        self.run.emit("log", message=as_text(message), line=line)

    async def notify(self, message: Any, *, line: int) -> None:
        self.run.emit("log", message=as_text(message), line=line, level="notify")

    async def call_function(self, name: str, args: list[Any], *, line: int) -> Any:
        from engine.flow.flowlib import call_function

        return call_function(name, args, line)

    async def parallel(self, branches: list[Callable[[], Awaitable[None]]], *, line: int) -> None:
        """Truly concurrent branches sharing the flow's frame; the first failure cancels the rest."""
        tasks = [asyncio.ensure_future(branch()) for branch in branches]
        if not tasks:
            return
        try:
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        except asyncio.CancelledError:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        # Every failure is collected (several branches can fail in one turn), the first raised.
        errors = [t.exception() for t in tasks if t.done() and not t.cancelled()]
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first

    async def tick(self, line: int) -> None:
        # A point where a cancelled run stops, even inside `loop do` without agent calls.
        await asyncio.sleep(0)

    # -- handlers ----------------------------------------------------------------------------

    async def run_handler(self, handler: HandlerSpec, scope: "HandlerScope", values: dict[str, Any]) -> None:
        frame = Variables({**values, "message": scope.subject}, self.vars)
        frame_token, scope_token = _FRAME.set(frame), _SCOPE.set(scope)
        try:
            await handler.fn(self)
        except RetryStep as exc:  # the step in flight is done again with this text (handlers.py)
            scope.retry_step = as_text(exc.value)
        finally:
            _FRAME.reset(frame_token)
            _SCOPE.reset(scope_token)

    def _scope(self, what: str, line: int) -> "HandlerScope":
        scope = _SCOPE.get()
        if scope is None:
            raise FlowError(f"`{what}` only works inside an input/output/tool handler", line)
        return scope

    def _unknown_guardrail(self, name: str, line: int) -> None:
        """An unknown guardrail never triggers; the run's log says so once per name."""
        if name not in self._unknown_guardrails:
            self._unknown_guardrails.add(name)
            self.run.emit("log", message=f"guardrail {name!r} is not available here: it never triggers "
                                         "(register it with engine.flow.guardrails.register_guardrail)",
                          line=line, level="warning")

    def guardrail(self, name: str, *, line: int) -> bool:
        """`block if NAME` (and `warn if`, `retry with ... if`): does the message in flight trip it?"""
        from engine.flow.flowlib import to_text
        from engine.flow.guardrails import check

        try:
            hit = check(name, to_text(self.vars.get("message")))
        except Exception as exc:  # a user's guardrail failed: the handler's step fails, clearly
            raise FlowError(f"guardrail {name!r} failed: {exc}", line) from None
        if hit is None:
            self._unknown_guardrail(name, line)
            return False
        return hit

    def mask(self, guardrail: str, *, line: int) -> None:
        from engine.flow.guardrails import UnknownGuardrail, mask

        scope = self._scope("mask", line)
        try:
            scope.subject = _map_strings(scope.subject, lambda text: mask(guardrail, text))
        except UnknownGuardrail:
            self._unknown_guardrail(guardrail, line)
            return
        except Exception as exc:
            raise FlowError(f"guardrail {guardrail!r} failed: {exc}", line) from None
        frame = _FRAME.get()
        if frame is not None:
            frame["message"] = scope.subject
            key = {"input": "input", "output": "output", "tool-call": "args", "tool-result": "result"}.get(scope.event)
            if key:
                frame[key] = scope.subject

    def block(self, condition: Any, *, line: int) -> None:
        scope = self._scope("block", line)
        if condition:
            scope.blocked = f"blocked by the {scope.event} handler at line {line}"
            self.run.emit("log", message=f"guardrail: {scope.blocked}", line=line, level="warning")

    def warn(self, message_or_condition: Any, *, line: int) -> None:
        if isinstance(message_or_condition, bool):
            if not message_or_condition:
                return
            message = f"warning: condition at line {line} matched"
        else:
            message = f"warning: {as_text(message_or_condition)}"
        self.run.emit("log", message=message, line=line, level="warning")

    def retry_with(self, value: Any, condition: Any, *, line: int) -> None:
        scope = self._scope("retry with", line)
        if condition:
            scope.retry_with = as_text(value)


def as_text_list(args: list[Any]) -> str:
    return "\n\n".join(as_text(a) for a in args)


def _map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    return value

