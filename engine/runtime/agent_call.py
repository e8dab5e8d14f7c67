"""THE agent call: every `run agent`, `call llm`, `use` child and `escalate_to_agent` target
goes through `call_agent`. It is the seam where human escalation, policies, schemas and events
happen, and where runs will later become durable.

One ADK session per call (per attempt). The loop drives the runner until the agent's final
reply; when the run paused on the ask tool, or the reply carries the escalation JSON, it asks the
escalation desk and resumes THE SAME session with the decision (a FunctionResponse with the
paused call's id and name, or a user message), until the agent finishes. An agent on an ACP
model is driven through its ACP session instead (`_converse_acp`), its reply handled the same way.
"""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.escalation import protocol
from engine.runtime import adk_turn
from engine.runtime.acp.call import AcpAgent, acp_agent, acp_command
from engine.escalation.broker import EscalationError
from engine.kernel.model import Origin
from engine.flow.flow_api import AbortFlow, FlowError, StopTask
from engine.runtime.adk_setup import models_ready
from engine.runtime.backoff import backoff_delay
from engine.runtime.frames import CURRENT, CallFrame, current, timeout_scope
from engine.runtime.handlers import GuardrailBlocked, handled_output, run_handlers
from engine.runtime.human import confirmation_answer, decide
from engine.runtime.model_errors import ModelCallError
from engine.runtime.models import ModelUnavailable, preload_litellm, streamed
from engine.runtime.prompt_escalation import escalation_spec, matches
from engine.runtime.schemas import SchemaMismatch, check, describe, parse_json
from engine.runtime.script_cursor import ScriptExhausted
from engine.flow.spec import AgentSpec
from engine.runtime.tools.registry import ToolUnavailable

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState


MAX_ROUNDS = 100  # escalations/corrections within one call before we call it a loop
MAX_OUTPUT_RETRIES = 3  # `retry with e if c` in output handlers
# Control flow, escalation failures and setup problems (no model, no tool, script used up) are
# not an agent's transient error: retrying cannot help, so they are never retried. A real model's
# failed turn was already retried where it failed (real_model.py), without repeating the call's
# earlier turns, tool calls and human decisions.
_NOT_RETRIED = (
    StopTask, AbortFlow, GuardrailBlocked, EscalationError, ModelUnavailable, ToolUnavailable, ScriptExhausted,
    ModelCallError, asyncio.CancelledError,
)


@dataclass(frozen=True)
class AgentOutcome:
    text: str  # the final reply as text
    value: Any  # the parsed value when the prompt expects a schema, else the text
    escalated: bool  # a prompt-level `escalate if` matched here or anywhere below


class EscalationUnresolved(FlowError):
    """A paused call we cannot answer (an unknown long-running tool)."""


def _user_text(text: str) -> Any:
    from google.genai import types

    return types.Content(role="user", parts=[types.Part.from_text(text=text)])


async def call_agent(
    run: "RunState", agent: str, message: str, *, history: Any = None, chain: tuple[str, ...] | None = None
) -> AgentOutcome:
    """Run one agent on one message, with its retry and timeout policies."""
    spec = run.agent_spec(agent)
    if spec is None:
        raise FlowError(f"no agent named {agent!r}")
    run.emit("agent_call", agent=spec.name, input=message)
    retry = run.workflow.RETRIES.get(spec.retry or "")
    attempts = 1 + (retry.times if retry else 0)
    seconds = spec.timeout_seconds
    if seconds is None and spec.timeout:
        policy = run.workflow.TIMEOUTS.get(spec.timeout)
        seconds = policy.seconds if policy else None
    await models_ready()  # before the timeout starts: importing a library is not the agent's time
    if not run.script_given:
        await preload_litellm(run.workflow)
    parent = current()
    for attempt in range(attempts):
        inherited = parent.escalation_chain if parent is not None else ()
        frame = CallFrame(spec.name, parent, escalation_chain=chain if chain is not None else inherited)
        token = CURRENT.set(frame)
        try:
            async with timeout_scope(seconds) as scope:
                frame.timeout = scope if seconds else None
                outcome = await _call_once(run, agent, spec, message, frame, history)
            break
        except _NOT_RETRIED:
            raise
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                exc = FlowError(f"agent {spec.name!r} timed out after {seconds:g} s")
            if attempt + 1 >= attempts:
                if isinstance(exc, FlowError):
                    raise exc
                raise
            delay = backoff_delay(retry.backoff if retry else None, attempt)
            run.emit("log", message=f"agent {spec.name!r} failed ({exc}); retry {attempt + 1} of {attempts - 1} in {delay:g} s")
            await asyncio.sleep(delay)
        finally:
            CURRENT.reset(token)
    if outcome.escalated and parent is not None:
        parent.mark_escalated()  # only a call that succeeded reports its escalation upwards
    for author, text in frame.texts.items():  # delegates that answered inside this call
        delegate = run.workflow.AGENTS.get(author)
        if author != spec.name and not (delegate is not None and _own_call(run, author, delegate)):
            run.emit("agent_result", agent=author, result=text)
    run.emit("agent_result", agent=spec.name, result=outcome.value)
    return outcome


async def _call_once(
    run: "RunState", key: str, spec: AgentSpec, message: str, frame: CallFrame, history: Any
) -> AgentOutcome:
    gate = await run_handlers(run, spec, "input", {"input": message}, subject=message)
    if gate.blocked:
        raise GuardrailBlocked(f"input of agent {spec.name!r} blocked: {gate.blocked}")
    text = gate.retry_step if gate.retry_step is not None else str(gate.subject)
    command = acp_command(run, key, spec)
    if command is not None:  # an ACP agent answers (engine/runtime/acp), not ADK
        async with acp_agent(run, key, spec, command).call() as agent:
            return await _converse_acp(run, agent, spec, text, frame, history)
    runner = run.runner_for(key)
    session = run.session_service.open(app_name=runner.app_name, user_id=run.run_id)  # the call's own, held
    try:
        return await _converse(run, runner, session, spec, text, frame, history)
    finally:
        # The session is this call's alone: kept, every call of a long run would stay in memory
        # (and in every full GC pass: 20-110 ms freezes with twenty busy runs) until the run ends.
        await run.session_service.delete_session(app_name=runner.app_name, user_id=run.run_id, session_id=session.id)


async def _converse(
    run: "RunState", runner: Any, session: Any, spec: AgentSpec, message: str, frame: CallFrame, history: Any
) -> AgentOutcome:
    """Drive one session until the agent's final reply, answering pauses and escalations."""
    if history:
        await _prefill(run, session, spec, await _compacted(run, spec, history))
    prompt = _expected(run, spec)
    next_message = _user_text(message)
    corrected = False
    output_retries = 0
    for _round in range(MAX_ROUNDS):
        frame.retry_with = None
        paused, final_text = await _drive(run, runner, session.id, next_message, frame)
        if paused:
            next_message = await _answer_pauses(run, paused)
            continue
        found = protocol.find_escalation(final_text)
        if found is not None:
            author = frame.last_author or spec.name
            escalation = protocol.to_escalation(
                found, id="", task_id=run.task, run_id=run.run_id, agent=author,
                origin=Origin.AGENT_TEXT,
            )
            decision = await decide(run, escalation)
            next_message = _user_text(protocol.decision_message(escalation, decision))
            continue
        if frame.retry_with is not None and output_retries < MAX_OUTPUT_RETRIES:
            output_retries += 1
            next_message = _user_text(str(frame.retry_with))
            continue
        value, correction = _valued(run, spec, prompt, final_text, corrected)
        if correction is not None:
            corrected = True  # one corrective message, in the same session
            next_message = _user_text(correction)
            continue
        await _check_prompt_escalations(run, runner, session, frame, spec)
        return AgentOutcome(final_text, value, frame.escalated)
    raise FlowError(f"agent {spec.name!r} kept escalating: more than {MAX_ROUNDS} rounds in one call")


async def _converse_acp(
    run: "RunState", agent: AcpAgent, spec: AgentSpec, message: str, frame: CallFrame, history: Any
) -> AgentOutcome:
    """`_converse` for an ACP agent, with the same meaning: its escalation JSON decided (the
    decision is its next prompt), its output handlers, the prompt's `expecting` schema (one
    corrective prompt, then the error) and `escalate if`. `history` gives the session the
    messages it does not already hold (engine/runtime/acp/call.py `opening`)."""
    messages = _messages(await _compacted(run, spec, history)) if history else []
    text = agent.opening(message, messages)
    prompt = _expected(run, spec)
    corrected = False
    output_retries = 0
    for _round in range(MAX_ROUNDS):
        frame.retry_with = None
        reply = await agent.turn(text)
        found = protocol.find_escalation(reply)
        if found is not None:
            escalation = protocol.to_escalation(found, id="", task_id=run.task, run_id=run.run_id, agent=spec.name,
                                                origin=Origin.AGENT_TEXT)
            decision = await decide(run, escalation)
            text = protocol.decision_message(escalation, decision)
            continue
        reply = await handled_output(run, spec, reply)
        if frame.retry_with is not None and output_retries < MAX_OUTPUT_RETRIES:
            output_retries += 1
            text = str(frame.retry_with)
            continue
        value, correction = _valued(run, spec, prompt, reply, corrected)
        if correction is not None:
            corrected = True
            text = correction
            continue
        frame.texts[spec.name] = reply
        frame.last_author = spec.name
        if _escalates(run, spec, spec.name, reply):
            frame.escalated = True
        return AgentOutcome(reply, value, frame.escalated)
    raise FlowError(f"agent {spec.name!r} kept escalating: more than {MAX_ROUNDS} rounds in one call")


async def _compacted(run: "RunState", spec: AgentSpec, history: Any) -> Any:
    """`history $h` under the agent's history policy (engine/runtime/history.py), if it has one."""
    policy = run.workflow.POLICIES.get(spec.history or "")
    if policy is None:
        return history
    from engine.runtime.history import compact

    return await compact(run, policy, history)


def _valued(
    run: "RunState", spec: AgentSpec, prompt: tuple[str, bool] | None, text: str, corrected: bool
) -> tuple[Any, str | None]:
    """The reply's value under the prompt's `expecting` schema, or the corrective message to
    send (once: a second mismatch is the call's error)."""
    if prompt is None:
        return text, None
    schema, as_list = prompt
    try:
        value = parse_json(text)
        check(value, schema, run.workflow.SCHEMAS, as_list)
    except SchemaMismatch as exc:
        if corrected:
            raise FlowError(f"agent {spec.name!r}: reply does not match {schema}{'[]' if as_list else ''}: {exc}") from None
        return None, (f"Your reply did not match the expected format ({exc}). Reply again with ONLY JSON of this "
                      f"shape: {describe(schema, run.workflow.SCHEMAS, as_list)}")
    return value, None


def _expected(run: "RunState", spec: AgentSpec) -> tuple[str, bool] | None:
    for name in (spec.instruction, spec.prompt):
        prompt = run.workflow.PROMPTS.get(name or "")
        if prompt is not None and prompt.expecting and prompt.expecting in run.workflow.SCHEMAS:
            return prompt.expecting, prompt.expecting_list
    return None


async def _drive(run: "RunState", runner: Any, session_id: str, message: Any, frame: CallFrame) -> tuple[list[tuple[str, Any]], str]:
    """One `run_async` until it ends (final reply or pause): paused calls and the last reply."""
    paused: list[tuple[str, Any]] = []
    answered: set[str] = set()  # long-running calls that gave their result at once (a child that did not ask)
    final_text = ""
    async for event in adk_turn.run_async(runner, user_id=run.run_id, session_id=session_id, new_message=message,
                                          run_config=_run_config(), traced=_traced()):
        content = event.content
        if content is None or not content.parts or event.author == "user":
            continue
        long_running = event.long_running_tool_ids or set()
        for part in content.parts:
            call = part.function_call
            if call is not None and call.id in long_running:
                paused.append((run.spec_name(event.author), call))
            if part.function_response is not None and part.function_response.id:
                answered.add(part.function_response.id)
        if event.partial or any(p.function_call or p.function_response for p in content.parts):
            continue
        text = "".join(p.text or "" for p in content.parts if not p.thought)
        if text:
            author = run.spec_name(event.author)
            frame.texts[author] = text
            frame.last_author = author
            final_text = text
    return [(agent, call) for agent, call in paused if call.id not in answered], final_text


def _run_config() -> Any:
    """ESCALATE_STREAM=1: real models answer as a stream (server-sent events); the agent's
    reply is still taken whole, once the stream ends."""
    return _built_run_config(streamed())


@functools.cache
def _built_run_config(stream: bool) -> Any:
    """Built once a process: given no telemetry settings, ADK builds a `TelemetryConfig` (which
    reads seven environment variables) several times a model turn; this one reads them once,
    with the same meaning (`RunConfig` is not changed by a run)."""
    from google.adk.agents.run_config import RunConfig, StreamingMode

    return RunConfig(streaming_mode=StreamingMode.SSE if stream else StreamingMode.NONE, telemetry=_telemetry())


@functools.cache
def _traced() -> bool:
    """Whether OpenTelemetry is set up in this process (a tracer provider set, or an `OTEL_*` or
    `ADK_EXPERIMENTAL_TELEMETRY*` variable): read once a process, at the first agent call."""
    import os

    from opentelemetry import trace

    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider) or any(
        name.startswith("OTEL_") or name.startswith("ADK_EXPERIMENTAL_TELEMETRY") for name in os.environ)


def _telemetry() -> Any:
    """ADK's telemetry settings. With no OpenTelemetry set up in this process (`_traced`), ADK's
    spans record nothing, yet by default (its experimental GenAI conventions) it builds every
    request's and reply's attributes for them, messages and tool declarations included: ~11% of
    a model turn's Python calls. Then the same nothing is recorded more cheaply: stable
    conventions, no content, no experimental telemetry. Set up, ADK's defaults and the
    environment decide, as before."""
    from google.adk.telemetry import ContentCapturingMode, TelemetryConfig

    if _traced():
        return TelemetryConfig()
    return TelemetryConfig(genai_semconv_stability_opt_in="stable", capture_message_content=ContentCapturingMode.NO_CONTENT,
                           adk_experimental_telemetry_opt_in=False)


async def _answer_pauses(run: "RunState", paused: list[tuple[str, Any]]) -> Any:
    """Decide every paused call and build the resume message (same ids, same names)."""
    from google.genai import types

    parts = []
    for agent, call in paused:
        args = dict(call.args or {})
        child = run.suspended.pop(call.id, None)
        if child is not None:  # a `use` child or hand-off target that waits for a person
            result = await child.settle()
            response = result if isinstance(result, dict) else {"result": result}
        elif call.name == protocol.ASK_TOOL_NAME:
            escalation = protocol.to_escalation(
                args, id="", task_id=run.task, run_id=run.run_id, agent=agent,
                origin=Origin.AGENT_TOOL,
            )
            decision = await decide(run, escalation)
            response = {
                "decision": protocol.decision_message(escalation, decision),
                **decision.to_event_fields(),
            }
        elif call.name == "adk_request_confirmation":
            response = await confirmation_answer(run, agent, args)
        else:
            raise EscalationUnresolved(f"agent {agent!r} paused on {call.name!r}, which nobody can answer")
        parts.append(types.Part(function_response=types.FunctionResponse(id=call.id, name=call.name, response=response)))
    return types.Content(role="user", parts=parts)


async def _check_prompt_escalations(
    run: "RunState", runner: Any, session: Any, frame: CallFrame, called: AgentSpec
) -> None:
    """`escalate if` of every agent that replied in this call (the called one and its
    delegates); `use` children checked themselves in their own call and marked the frame."""
    for author, text in frame.texts.items():
        spec = called if author == called.name else run.workflow.AGENTS.get(author)
        if spec is None or (spec is not called and _own_call(run, author, spec)):
            continue
        if _escalates(run, spec, author, text):
            frame.escalated = True
            await _append_escalate_event(run, runner, session, author)


def _escalates(run: "RunState", spec: AgentSpec, author: str, text: str) -> bool:
    """Whether the reply matches the agent's `escalate if` (then said in an `escalation` event)."""
    condition = escalation_spec(run.workflow, spec)
    if condition is None or not matches(condition, text, run.context):
        return False
    run.emit(
        "escalation", agent_name=author, result=text, condition_op=condition.op,
        condition_value=condition.value if condition.op != "expr" else condition.source,
    )
    return True


def _own_call(run: "RunState", author: str, spec: AgentSpec) -> bool:
    """A delegate that answered through an agent call of its own (an ACP agent: agents.py
    `AcpDelegate`), which checked its reply and said its result itself."""
    return acp_command(run, author, spec) is not None


async def _append_escalate_event(run: "RunState", runner: Any, session: Any, author: str) -> None:
    """The ADK side of a prompt-level escalation: an event with `actions.escalate=True`, for
    ADK parents (LoopAgent, ParallelAgent) that read it."""
    from google.adk.events import Event, EventActions

    from engine.runtime.agents import adk_name

    fresh = await run.session_service.get_session(app_name=runner.app_name, user_id=run.run_id, session_id=session.id)
    if fresh is None:
        return
    event = Event(
        author=adk_name(author),
        invocation_id=fresh.events[-1].invocation_id if fresh.events else "",
        actions=EventActions(escalate=True, skip_summarization=True),
    )
    await run.session_service.append_event(fresh, event)


async def _prefill(run: "RunState", session: Any, spec: AgentSpec, history: Any) -> None:
    """`history $h`: earlier messages (strings, or {role, content} objects) put in the session."""
    from google.adk.events import Event
    from google.genai import types

    from engine.runtime.agents import adk_name

    for role, text in _messages(history):
        model_side = role == "assistant"
        content = types.Content(role="model" if model_side else "user", parts=[types.Part.from_text(text=text)])
        await run.session_service.append_event(
            session, Event(author=adk_name(spec.name) if model_side else "user", invocation_id="history", content=content)
        )


def _messages(history: Any) -> list[tuple[str, str]]:
    """`history $h` as (role, text): strings are the user's; {role, content} objects whose role
    is assistant, model or agent are the agent's own."""
    messages = []
    for item in history if isinstance(history, list) else [history]:
        role, text = "user", item
        if isinstance(item, dict):
            role = str(item.get("role", "user"))
            text = item.get("content", item.get("text", ""))
        side = "assistant" if role in ("assistant", "model", "agent") else "user"
        messages.append((side, text if isinstance(text, str) else json.dumps(text, default=str)))
    return messages
