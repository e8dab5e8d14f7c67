"""The ADK-side hooks of a run: the ask tool, agent tools for `use`, `escalate_to_agent`, and
the agent callbacks (tool gating through the rules; input/output/tool handlers).

Tool gating is enforced here, in code: a denied tool never runs, whatever the model does.
"""

from __future__ import annotations

import inspect
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Callable

from google.adk.tools.agent_tool import AgentTool

from engine.escalation.desk import Gate
from engine.flow.spec import AgentSpec
from engine.runtime.human import hold_verdict, settle_tool
from rules.shell import SHELL_TOOL

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState


# Tools that are escalation mechanisms themselves, not actions: never gated by the rules.
UNGATED = {"ask_human", "escalate_to_agent", "transfer_to_agent", "adk_request_confirmation"}


def ask_human(
    question: str,
    reason: str = "other",
    context: str = "",
    options: list[dict[str, Any]] | None = None,
    allow_agent_decision: bool = False,
    timeout: float | None = None,
) -> None:
    """Ask a human to decide. The run pauses until the decision arrives as this tool's result.

    reason: one of architecture_decision, breaking_change, unclear_requirement, test_failure,
    security_concern, cost_warning, file_conflict, dependency_issue, other.
    options: choices as objects with id, label, description and recommended.
    """
    # Returning None is what makes ADK pause on this long-running call (field notes).
    return None


# An agent may `use` itself (the origin's diff chunker splits a diff by calling itself): the
# agents a `use` call is running inside, so that recursion stops at a depth, with a clear error.
_USE_CHAIN: ContextVar[tuple[str, ...]] = ContextVar("escalate_use_chain", default=())
MAX_SELF_USE = 5


class RuntimeAgentTool(AgentTool):
    """`use CHILD`: runs the child through the one agent-call function in its own session, so
    the child can pause for a human and resume (ADK's AgentTool cannot resume a paused child),
    and a prompt-level escalation inside the child propagates to the caller."""

    def __init__(self, run: "RunState", child: str, declaration_agent: Any) -> None:
        super().__init__(declaration_agent, skip_summarization=False, include_plugins=False)
        self._run = run
        self._child = child
        # A child that waits for a person pauses its caller on this call (child_calls.py).
        self.is_long_running = True

    async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
        from engine.runtime.child_calls import call_in_tool

        request = args.get("request", "") if isinstance(args, dict) else args
        chain = _USE_CHAIN.get()
        if chain.count(self._child) >= MAX_SELF_USE:
            message = (f"agent {self._child!r} uses itself more than {MAX_SELF_USE} levels deep: "
                       "the recursion stops here; answer with what you have")
            self._run.emit("log", message=message, level="warning")
            return {"error": message}

        async def child() -> Any:
            token = _USE_CHAIN.set(chain + (self._child,))
            try:
                outcome = await self._run.call_agent(self._child, str(request))
            finally:
                _USE_CHAIN.reset(token)
            return outcome.value if isinstance(outcome.value, (dict, list)) else outcome.text

        return await call_in_tool(self._run, tool_context.function_call_id, child)


def agent_tool(run: "RunState", child: str, declaration_agent: Any) -> RuntimeAgentTool:
    return RuntimeAgentTool(run, child, declaration_agent)


def escalate_to_agent_tool(run: "RunState", source: str) -> Callable[..., Any]:
    """`escalate_to_agent` for one source agent (seed 002): the policy decides; approved, the
    target agent runs the task and its answer is the result; denied, the reason and fallbacks."""

    async def escalate_to_agent(reason: str, task: str, tool_context: Any, suggested_target: str = "") -> dict[str, Any] | None:
        """Hand a task you cannot do well to a more specialised agent.

        reason: why you escalate. task: what the other agent should do.
        suggested_target: the agent you think fits (optional).
        """
        from engine.runtime.agent_escalation import escalate_to_agent as run_escalation

        return await run_escalation(run, source, reason, task, suggested_target, tool_context.function_call_id)

    return escalate_to_agent


def agent_callbacks(run: "RunState", spec: AgentSpec) -> dict[str, Any]:
    """The LlmAgent callbacks for one agent of the run."""
    from engine.runtime.handlers import handled_output, run_handlers

    name = spec.name

    async def before_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
        # The arguments fit the tool's schema before anything else reads them: the rules then
        # match the values the tool runs with, and a call that cannot run bothers nobody.
        refusal = _checked(run, name, tool, args)
        if refusal is not None or tool.name in UNGATED:
            return refusal
        refusal = await _gate(run, name, tool, args, tool_context)
        if refusal is not None:
            return refusal
        outcome = await run_handlers(run, spec, "tool-call", {"tool": tool.name, "args": dict(args)}, subject=args)
        if outcome.blocked:
            return {"error": f"refused: {outcome.blocked}"}
        if outcome.retry_step is not None:
            return {"error": outcome.retry_step}
        if isinstance(outcome.subject, dict) and outcome.subject is not args:
            args.clear()
            args.update(outcome.subject)
            refusal = _checked(run, name, tool, args)  # a handler's rewrite fits the schema too
            if refusal is not None:
                return refusal
        if run.durable and not isinstance(tool, RuntimeAgentTool) and _runnable(tool):
            return await _recorded_tool_call(tool, args, tool_context)
        return None

    async def after_tool(tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> Any:
        if tool.name in UNGATED:
            return None
        if tool.name == SHELL_TOOL and isinstance(tool_response, dict):  # what a command printed, in the run's log
            run.emit("log", message=f"{tool.name}: exit {tool_response.get('exit_code')}", tool=tool.name,
                     output=tool_response)
        outcome = await run_handlers(
            run, spec, "tool-result", {"tool": tool.name, "args": dict(args), "result": tool_response}, subject=tool_response
        )
        if outcome.blocked:
            return {"error": f"blocked: {outcome.blocked}"}
        if outcome.retry_step is not None:
            return {"error": outcome.retry_step}
        if outcome.subject is not tool_response:
            return outcome.subject if isinstance(outcome.subject, dict) else {"result": outcome.subject}
        return None

    async def before_model(callback_context: Any, llm_request: Any) -> None:
        await run.budget.before_turn(run, name)  # may ask a person (cost_warning) or stop the run
        if run.budget.notice:
            llm_request.append_instructions([run.budget.notice])

    async def after_model(callback_context: Any, llm_response: Any) -> Any:
        run.budget.count(llm_response)
        content = llm_response.content
        if content is None or not content.parts or llm_response.partial:
            return None
        if any(p.function_call is not None for p in content.parts):
            return None
        text = "".join(p.text or "" for p in content.parts if not p.thought)
        handled = await handled_output(run, spec, text)
        if handled != text:
            from google.genai import types

            llm_response.content = types.Content(role="model", parts=[types.Part.from_text(text=handled)])
            return llm_response
        return None

    for callback in (before_tool, after_tool, before_model, after_model):
        callback.__signature__ = _signature(callback)  # type: ignore[attr-defined]
    return {"before_tool_callback": before_tool, "after_tool_callback": after_tool,
            "before_model_callback": before_model, "after_model_callback": after_model}


_SIGNATURES: dict[str, inspect.Signature] = {}


def _signature(callback: Callable[..., Any]) -> inspect.Signature:
    """ADK reads a callback's signature at every call (`inspect.signature`, ~40 Python calls; two
    a model turn), which takes `__signature__` as given (PEP 362): read once a process, the
    same for every agent's closure of one name."""
    found = _SIGNATURES.get(callback.__name__)
    if found is None:
        found = _SIGNATURES[callback.__name__] = inspect.signature(callback)
    return found


CONFIRMATION_PENDING = {"status": "waiting for a human to approve or deny this call"}


def _checked(run: "RunState", agent: str, tool: Any, args: dict[str, Any]) -> dict[str, Any] | None:
    """Check `args` against the tool's schema (tools/arguments.py), in place: None when they fit
    (then `args` holds the checked values), else the refusal the model sees, logged once."""
    from engine.runtime.tools.arguments import ArgumentsRefused, check_tool_args

    try:
        checked = check_tool_args(tool, args)
    except ArgumentsRefused as exc:
        run.emit("log", message=f"{agent}: the call to {exc.tool} was refused, its arguments do not fit the "
                                f"tool's schema ({exc.problems}); nothing ran", level="warning")
        return {"error": f"The call to {exc.tool} did not run: invalid arguments ({exc.problems}). "
                         "Call it again with the arguments it declares, of their declared types."}
    if checked is not None and checked != args:
        args.clear()
        args.update(checked)
    return None


async def _gate(run: "RunState", agent: str, tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any] | None:
    """The rules' verdict, computed once, without waiting for anyone here: a call a human must
    approve pauses the agent on ADK's confirmation request with its verdict held, the agent call
    answers the pause (human.confirmation_answer), and ADK calls the tool again with the answer
    in `tool_context.tool_confirmation`. Returns the refusal the agent sees, or None when the
    call may run."""
    confirmation = tool_context.tool_confirmation
    if confirmation is not None:  # the human's answer, given at the flow level
        payload = confirmation.payload if isinstance(confirmation.payload, dict) else {}
        if confirmation.confirmed:
            edited = payload.get("args")
            if isinstance(edited, dict):  # approved with edited arguments (the desk checked them and ran the rules)
                args.clear()
                args.update(edited)
                return _checked(run, agent, tool, args)  # against this very tool's schema
            return None
        return {"error": str(payload.get("message") or f"the call to {tool.name} was denied")}
    verdict = run.desk.tool_verdict(run.task, tool.name, dict(args))  # this call's one verdict
    if verdict.gate is Gate.ASK:
        hold_verdict(tool_context.function_call_id, verdict)  # settled when the pause is answered
        tool_context.request_confirmation(hint=f"Allow {agent} to call {tool.name}?", payload={"agent": agent})
        tool_context.actions.skip_summarization = True  # the pause is not a result to summarize
        return dict(CONFIRMATION_PENDING)
    outcome = await settle_tool(run, agent, tool.name, args, verdict)
    if not outcome.runs:
        return {"error": outcome.message or f"the call to {tool.name} was refused by the rules"}
    return None


def _runnable(tool: Any) -> bool:
    """Not ADK's stand-in for a tool the model named but the agent does not have (ADK answers
    that call itself, with its "no tool with that name" result)."""
    from google.adk.tools.base_tool import BaseTool

    return type(tool).run_async is not BaseTool.run_async


async def _recorded_tool_call(tool: Any, args: dict[str, Any], tool_context: Any) -> dict[str, Any]:
    """A durable run's tool call as a recorded step: after a crash a finished call is not run
    again, its recorded result is replayed."""
    from engine.durable.steps import step

    async def call() -> dict[str, Any]:
        result = await tool.run_async(args=dict(args), tool_context=tool_context)
        return result if isinstance(result, dict) else {"result": result}

    return await step(f"tool {tool.name}", call)
