"""Runs through real ADK runners with the scripted model; workflows written as the generator
writes them (spec class attributes + async flow methods calling ctx)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from engine.kernel.clock import FakeClock
from engine.runtime.engine import CompiledWorkflow, RunStatus
from engine.flow.spec import (
    AgentSpec,
    EscalationSpec,
    HandlerSpec,
    PromptSpec,
    RetrySpec,
    SchemaSpec,
    TimeoutSpec,
    ToolSpec,
    TypeSpec,
    WorkflowBase,
)
from tests.runtime.conftest import events


def prompt(name: str, body: str, **kw: Any) -> PromptSpec:
    return PromptSpec(name, body=lambda ctx, b=body: b, **kw)


class OneAgent(WorkflowBase):
    PROMPTS = {"p": prompt("p", "You answer.")}
    TOOLS = {"fs": ToolSpec("fs", "builtin", "streetrace.fs")}
    AGENTS = {"worker": AgentSpec("worker", instruction="p", tools=("fs",))}
    FLOWS = {"main": "flow_main"}

    async def flow_main(self, ctx: Any) -> Any:
        result = await ctx.run_agent("worker", [ctx.get("input", 1)], line=2)
        return result.value


async def test_flow_returns_agent_output_and_emits_events(harness) -> None:
    handle = await harness.run(OneAgent, "agents:\n  worker:\n    - 'hello back'\n", input="hi")
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "hello back"
    assert events(handle, "agent_call") == [{"agent": "worker", "input": "hi"}]
    assert events(handle, "agent_result") == [{"agent": "worker", "result": "hello back"}]
    assert events(handle, "flow_result") == [{"result": "hello back"}]
    assert all(e.time.endswith("Z") for e in handle.events)


async def test_run_times_are_on_the_engines_clock(harness) -> None:
    clock = FakeClock(500.0)
    engine = harness.engine("agents:\n  worker:\n    - 'done'\n", clock=clock)
    handle = engine.start_run(CompiledWorkflow(Path("wf.sr"), "wf", OneAgent), input="hi")
    assert handle.started_at == 500.0
    clock.advance(7)
    await handle.wait()
    assert handle.finished_at == 507.0


async def test_out_of_replies_fails_naming_the_agent(harness) -> None:
    handle = await harness.run(OneAgent, "agents: {}\n")
    assert handle.status is RunStatus.FAILED
    assert "'worker'" in handle.error and "no scripted reply" in handle.error


async def test_json_escalation_decision_reaches_the_same_session(harness) -> None:
    script = """
agents:
  worker:
    - escalate:
        reason: architecture_decision
        question: "Use JWT?"
        options: [{id: opt1, label: "Yes, use JWT", recommended: true}, {id: opt2, label: "No"}]
    - text: "going with JWT"
      when: "opt1"
    - "fallback"
"""
    answers = "- {responseType: option, selectedOption: opt1, additionalInstructions: 'keep cookies'}\n"
    handle = await harness.run(OneAgent, script, answers=answers)
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "going with JWT"
    [asked] = events(handle, "human_escalation")
    assert asked["question"] == "Use JWT?" and asked["agent"] == "worker"
    [decision] = events(handle, "decision")
    assert decision["selectedOption"] == "opt1" and decision["resolvedBy"] == "answers_file"


async def test_ask_tool_pauses_and_resumes_with_the_decision(harness) -> None:
    script = """
agents:
  worker:
    - tool: ask_human
      args: {question: "Deploy now?", reason: other, options: [{id: go, label: Go}, {id: wait, label: Wait}]}
    - text: "deploying"
      when: "Chosen option: go"
"""
    handle = await harness.run(OneAgent, script, answers="- {responseType: option, selectedOption: go}\n")
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "deploying"
    assert events(handle, "human_escalation")[0]["origin"] == "agent_tool"


async def test_text_answer_and_skip_reach_the_agent(harness) -> None:
    script = """
agents:
  worker:
    - escalate: {reason: unclear_requirement, question: "Which DB?"}
    - text: "using postgres"
      when: "Answer: postgres"
"""
    handle = await harness.run(OneAgent, script, answers="- {responseType: text, textResponse: postgres}\n")
    assert handle.result == "using postgres", handle.error


async def test_denied_tool_returns_a_refusal_the_agent_sees(harness) -> None:
    (harness.workspace / "old.txt").write_text("keep me")
    rules = """
escalationRules:
  global:
    - {pattern: "delete_file", action: deny}
"""
    script = """
agents:
  worker:
    - tool: delete_file
      args: {path: old.txt}
    - text: "could not delete"
      when: "denied"
"""
    handle = await harness.run(OneAgent, script, rules=rules)
    assert handle.result == "could not delete", handle.error
    assert (harness.workspace / "old.txt").exists()
    assert events(handle, "tool_call") == [
        {"agent": "worker", "tool": "delete_file", "args": {"path": "old.txt"}, "verdict": "denied"}
    ]


async def test_require_confirmation_approved_runs_the_tool(harness) -> None:
    rules = """
escalationRules:
  taskOverrides:
    deploy-production: {requireConfirmation: true}
"""
    script = """
agents:
  worker:
    - tool: write_file
      args: {path: out/notes.txt, content: "hello"}
    - text: "written"
      when: "written"
"""
    handle = await harness.run(
        OneAgent, script, rules=rules, task="deploy-production", answers="- {responseType: option, selectedOption: approve}\n"
    )
    assert handle.result == "written", handle.error
    assert (harness.workspace / "out" / "notes.txt").read_text() == "hello"
    assert events(handle, "tool_call")[0]["verdict"] == "confirmed"


async def test_unanswered_tool_approval_is_denied_headless(harness) -> None:
    rules = "escalationRules:\n  global:\n    - {pattern: write_file, action: ask_user}\n"
    script = """
agents:
  worker:
    - tool: write_file
      args: {path: x.txt, content: "x"}
    - text: "was denied"
      when: "denied"
"""
    handle = await harness.run(OneAgent, script, rules=rules)
    assert handle.result == "was denied", handle.error
    assert not (harness.workspace / "x.txt").exists()


async def test_stop_rule_stops_the_task(harness) -> None:
    rules = "escalationRules:\n  global:\n    - {pattern: 'npm publish', action: stop}\n"
    script = """
agents:
  worker:
    - escalate: {reason: other, question: "Run npm publish?"}
    - "never"
"""
    handle = await harness.run(OneAgent, script, rules=rules)
    assert handle.status is RunStatus.STOPPED, handle.error


async def test_sandbox_refuses_paths_outside_the_workspace(harness, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, harness.workspace / "link")
    script = f"""
agents:
  worker:
    - tool: read_file
      args: {{path: "../{outside.name}/secret.txt"}}
    - tool: read_file
      args: {{path: "{outside}/secret.txt"}}
    - tool: read_file
      args: {{path: "link/secret.txt"}}
    - tool: write_file
      args: {{path: "../escape.txt", content: "x"}}
    - "done"
"""
    handle = await harness.run(OneAgent, script)
    assert handle.status is RunStatus.DONE, handle.error
    assert not (harness.workspace.parent / "escape.txt").exists()
    # Every tool result the agent got was a refusal, never the secret.
    texts = [str(e.fields) for e in handle.events]
    assert not any("'secret'" in t for t in texts)


class Resolver(WorkflowBase):
    """Seed 001's resolver: `$current = run agent peer1 $current, on escalate return $current`."""

    PROMPTS = {
        "enhancer": prompt("enhancer", "Enhance.", escalation=EscalationSpec("contains", "DRIFTING")),
    }
    AGENTS = {"peer1": AgentSpec("peer1", instruction="enhancer"), "peer2": AgentSpec("peer2", instruction="enhancer")}
    FLOWS = {"default": "flow_default"}

    async def flow_default(self, ctx: Any) -> Any:
        ctx.vars["current"] = ctx.get("input_prompt", 1)
        for _ in range(3):
            await ctx.tick(3)
            previous = ctx.vars["current"]
            r = await ctx.run_agent("peer1", [ctx.get("current", 4)], line=4)
            ctx.vars["current"] = r.value
            if r.escalated:
                return previous
            previous = ctx.vars["current"]
            r = await ctx.run_agent("peer2", [ctx.get("current", 5)], line=5)
            ctx.vars["current"] = r.value
            if r.escalated:
                return previous
        return ctx.vars["current"]


async def test_resolver_returns_previous_value_on_escalation(harness) -> None:
    script = """
agents:
  peer1: ["draft v1", "I am DRIFTING now"]
  peer2: ["draft v2"]
"""
    handle = await harness.run(Resolver, script, input="draft v0")
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "draft v2"
    [esc] = events(handle, "escalation")
    assert esc == {"agent_name": "peer1", "result": "I am DRIFTING now", "condition_op": "contains", "condition_value": "DRIFTING"}


async def test_expression_condition_error_means_no_escalation(harness) -> None:
    def broken(ctx: Any, output: Any) -> bool:
        raise KeyError("nope")

    class Broken(OneAgent):
        PROMPTS = {"p": prompt("p", "x", escalation=EscalationSpec("expr", check=broken, source="$output.x"))}

        async def flow_main(self, ctx: Any) -> Any:
            r = await ctx.run_agent("worker", ["go"], line=1)
            return {"escalated": r.escalated}

    handle = await harness.run(Broken, "agents:\n  worker: ['anything']\n")
    assert handle.result == {"escalated": False}, handle.error


class Hierarchy(WorkflowBase):
    """coordinator delegates to specialist, which uses helper (a tool agent)."""

    PROMPTS = {"leafp": prompt("leafp", "Leaf.", escalation=EscalationSpec("contains", "STUCK"))}
    AGENTS = {
        "coordinator": AgentSpec("coordinator", delegate=("specialist",)),
        "specialist": AgentSpec("specialist", use=("helper",), description="does the work"),
        "helper": AgentSpec("helper", instruction="leafp"),
    }
    FLOWS = {"main": "flow_main"}

    async def flow_main(self, ctx: Any) -> Any:
        r = await ctx.run_agent("coordinator", ["task"], line=1)
        return {"value": r.value, "escalated": r.escalated}


HIERARCHY_SCRIPT = """
agents:
  coordinator:
    - tool: transfer_to_agent
      args: {agent_name: specialist}
  specialist:
    - tool: helper
      when: "task"  # the user's message reaches the delegate (not ADK's transcript of the transfer)
      args: {request: "look it up"}
    - text: "specialist done"
      when: "%s"
  helper:
    - "%s"
"""


async def test_delegate_and_use_reach_sub_agents_and_escalation_propagates(harness) -> None:
    handle = await harness.run(Hierarchy, HIERARCHY_SCRIPT % ("STUCK", "I am STUCK"))
    assert handle.result == {"value": "specialist done", "escalated": True}, handle.error
    calls = [e["agent"] for e in events(handle, "agent_call")]
    assert calls == ["coordinator", "helper"]
    results = [e["agent"] for e in events(handle, "agent_result")]
    assert results == ["helper", "specialist", "coordinator"]
    assert [e["agent_name"] for e in events(handle, "escalation")] == ["helper"]


async def test_use_child_without_escalation_does_not_flag(harness) -> None:
    handle = await harness.run(Hierarchy, HIERARCHY_SCRIPT % ("all good", "all good"))
    assert handle.result == {"value": "specialist done", "escalated": False}, handle.error


async def test_human_escalation_inside_a_use_child_resumes_the_child(harness) -> None:
    script = """
agents:
  coordinator:
    - tool: transfer_to_agent
      args: {agent_name: specialist}
  specialist:
    - tool: helper
      args: {request: "look it up"}
    - text: "specialist saw: child chose b"
      when: "child chose b"
  helper:
    - escalate: {reason: other, question: "a or b?", options: [{id: a, label: A}, {id: b, label: B}]}
    - text: "child chose b"
      when: "Chosen option: b"
"""
    handle = await harness.run(Hierarchy, script, answers="- {responseType: option, selectedOption: b}\n")
    assert handle.result["value"] == "specialist saw: child chose b", handle.error
    assert events(handle, "human_escalation")[0]["agent"] == "helper"


class Parallel(WorkflowBase):
    TOOLS = {"cli": ToolSpec("cli", "builtin", "streetrace.cli")}
    AGENTS = {"a": AgentSpec("a", tools=("cli",)), "b": AgentSpec("b", tools=("cli",))}
    FLOWS = {"main": "flow_main"}

    async def flow_main(self, ctx: Any) -> Any:
        async def branch_a() -> None:
            ctx.vars["ra"] = (await ctx.run_agent("a", ["input a"], line=2)).value

        async def branch_b() -> None:
            ctx.vars["rb"] = (await ctx.run_agent("b", ["input b"], line=3)).value

        await ctx.parallel([branch_a, branch_b], line=1)
        return [ctx.get("ra", 4), ctx.get("rb", 4)]


async def test_parallel_branches_overlap_in_time(harness) -> None:
    script = """
agents:
  a:
    - tool: run_command
      args: {command: "sleep 0.4"}
    - text: "a done"
      when: "input a"
    - "a done"
  b:
    - tool: run_command
      args: {command: "sleep 0.4"}
    - "b done"
"""
    loop = asyncio.get_running_loop()
    started = loop.time()
    handle = await harness.run(Parallel, script)
    elapsed = loop.time() - started
    assert handle.result == ["a done", "b done"], handle.error
    order = [(e.type, e.fields.get("agent")) for e in handle.events if e.type in ("agent_call", "agent_result")]
    # Both calls start before either finishes.
    assert order[:2] == [("agent_call", "a"), ("agent_call", "b")]
    assert elapsed < 0.8 + 0.5  # two 0.4 s tools run concurrently (generous margin for a slow box)
    assert [e["input"] for e in events(handle, "agent_call")] == ["input a", "input b"]


async def test_parallel_branches_failing_together_fail_the_run_once(harness) -> None:
    import gc

    loop = asyncio.get_running_loop()
    unretrieved: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))
    try:
        handle = await harness.run(Parallel, "agents: {a: [], b: []}\n")
        status, error = handle.status, handle.error
        del handle  # its error holds the branches' frames
        gc.collect()  # an exception nobody retrieved is reported when its task is collected
    finally:
        loop.set_exception_handler(None)
    assert status is RunStatus.FAILED and "no scripted reply" in error
    assert [c["message"] for c in unretrieved] == []


class Guarded(WorkflowBase):
    AGENTS = {"worker": AgentSpec("worker")}
    FLOWS = {"main": "flow_main"}

    async def _mask(ctx: Any) -> None:
        ctx.mask("pii", line=10)

    async def _block(ctx: Any) -> None:
        ctx.block("forbidden" in ctx.get("output", 11), line=11)

    HANDLERS = (HandlerSpec("on", "input", _mask, 10), HandlerSpec("on", "output", _block, 11))

    async def flow_main(self, ctx: Any) -> Any:
        return (await ctx.run_agent("worker", [ctx.get("input", 1)], line=1)).value


async def test_input_masking_reaches_the_model(harness) -> None:
    script = """
agents:
  worker:
    - text: "saw a masked email"
      when: "[MASKED_EMAIL]"
    - "saw the raw email"
"""
    handle = await harness.run(Guarded, script, input="write to bob@example.com")
    assert handle.result == "saw a masked email", handle.error
    assert events(handle, "agent_call")[0]["input"] == "write to bob@example.com"


async def test_output_guardrail_blocks(harness) -> None:
    handle = await harness.run(Guarded, "agents:\n  worker: ['this is forbidden']\n", input="x")
    assert handle.status is RunStatus.FAILED
    assert "blocked" in handle.error


class Structured(WorkflowBase):
    SCHEMAS = {"Review": SchemaSpec("Review", {"score": TypeSpec("int"), "notes": TypeSpec("string", optional=True)})}
    PROMPTS = {"review": prompt("review", "Review it.", expecting="Review")}
    AGENTS = {"reviewer": AgentSpec("reviewer", instruction="review")}
    FLOWS = {"main": "flow_main"}

    async def flow_main(self, ctx: Any) -> Any:
        return (await ctx.run_agent("reviewer", ["code"], line=1)).value


async def test_schema_one_corrective_retry(harness) -> None:
    script = """
agents:
  reviewer:
    - "looks fine to me"
    - text: '```json\n{"score": 8}\n```'
      when: "expected format"
"""
    handle = await harness.run(Structured, script)
    assert handle.result == {"score": 8}, handle.error


async def test_schema_second_failure_fails_the_call(harness) -> None:
    handle = await harness.run(Structured, "agents:\n  reviewer: ['nope', '{\"score\": \"high\"}']\n")
    assert handle.status is RunStatus.FAILED
    assert "score" in handle.error


class Policies(WorkflowBase):
    TOOLS = {"cli": ToolSpec("cli", "builtin", "streetrace.cli")}
    RETRIES = {"twice": RetrySpec("twice", 2, "fixed")}
    TIMEOUTS = {"short": TimeoutSpec("short", 0.3)}
    AGENTS = {"slow": AgentSpec("slow", tools=("cli",), retry="twice", timeout="short")}
    FLOWS = {"main": "flow_main"}

    async def flow_main(self, ctx: Any) -> Any:
        return (await ctx.run_agent("slow", ["go"], line=1)).value


async def test_timeout_then_retry_succeeds(harness) -> None:
    script = """
agents:
  slow:
    - tool: run_command
      args: {command: "sleep 2"}
    - "fast answer"
"""
    handle = await harness.run(Policies, script)
    assert handle.result == "fast answer", handle.error
    assert any("retry 1 of 2" in e["message"] for e in events(handle, "log"))


async def test_cancel_while_waiting_on_a_human(harness) -> None:
    engine = harness.engine("agents:\n  worker:\n    - escalate: {reason: architecture_decision, question: 'Q?'}\n")
    from pathlib import Path

    from engine.runtime.engine import CompiledWorkflow

    handle = engine.start_run(CompiledWorkflow(Path("wf.sr"), "wf", OneAgent))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if handle.status is RunStatus.WAITING:
            break
    assert handle.status is RunStatus.WAITING
    assert len(engine.broker.pending()) == 1
    handle.cancel()
    assert await handle.wait() is RunStatus.CANCELLED
    assert engine.broker.pending() == []


class Agents(WorkflowBase):
    AGENTS = {n: AgentSpec(n) for n in ("locator", "analyzer", "pattern_finder")}
    FLOWS = {"main": "flow_main"}

    async def flow_main(self, ctx: Any) -> Any:
        return (await ctx.run_agent("locator", ["find the auth code"], line=1)).value


POLICY_RULES = """
policy:
  paths: {locator: [analyzer, pattern_finder], analyzer: [locator]}
  fallbacks: {analyzer: [pattern_finder]}
"""


async def test_agent_escalation_approved_then_loop_denied(harness) -> None:
    script = """
agents:
  locator:
    - tool: escalate_to_agent
      args: {reason: "need analysis", task: "analyze auth.py", suggested_target: analyzer}
    - text: "locator got: analysis ready"
      when: "analysis ready"
  analyzer:
    - tool: escalate_to_agent
      args: {reason: "back to you", task: "locate it again", suggested_target: locator}
    - text: "analysis ready"
      when: "loop"
"""
    handle = await harness.run(Agents, script, rules=POLICY_RULES)
    assert handle.result == "locator got: analysis ready", handle.error
    first, second = events(handle, "agent_escalation")
    assert (first["source"], first["target"], first["approved"]) == ("locator", "analyzer", True)
    assert (second["source"], second["target"], second["approved"]) == ("analyzer", "locator", False)
    assert "loop" in second["reason"]
    assert [e["agent"] for e in events(handle, "agent_call")] == ["locator", "analyzer"]


async def test_escalate_to_agent_only_for_policy_sources(harness) -> None:
    script = """
agents:
  locator:
    - tool: escalate_to_agent
      args: {reason: x, task: y}
    - text: "no such tool for me"
      when: "no tool with that name"
"""
    handle = await harness.run(Agents, script, rules="policy:\n  paths: {analyzer: [locator]}\n")
    # locator is no source here: ADK answers its call as an unknown tool; nothing escalates.
    assert handle.result == "no such tool for me", handle.error
    assert events(handle, "agent_escalation") == []


async def test_history_is_put_in_the_session(harness) -> None:
    class WithHistory(OneAgent):
        async def flow_main(self, ctx: Any) -> Any:
            h = [{"role": "user", "content": "my name is Ada"}, {"role": "assistant", "content": "hello Ada"}]
            return (await ctx.run_agent("worker", ["and now?"], history=h, line=1)).value

    import engine.runtime.scripted_model as sm

    seen: list[int] = []
    original = sm.latest_input

    def spy(request: Any) -> str:
        seen.append(len(request.contents))
        return original(request)

    sm.latest_input = spy
    try:
        handle = await harness.run(WithHistory, "agents:\n  worker: ['ok']\n")
    finally:
        sm.latest_input = original
    assert handle.result == "ok", handle.error
    assert seen == [3]  # two history messages + the new one


async def test_flow_escalate_to_human_returns_the_answer_text(harness) -> None:
    class Asks(WorkflowBase):
        FLOWS = {"main": "flow_main"}

        async def flow_main(self, ctx: Any) -> Any:
            return await ctx.escalate_to_human("Ship it?", line=1)

    handle = await harness.run(Asks, None, answers="- {responseType: text, textResponse: 'ship behind a flag'}\n")
    assert handle.result == "ship behind a flag", handle.error
    assert events(handle, "human_escalation")[0]["origin"] == "flow"


async def test_real_model_without_key_says_how_to_run_offline(harness, monkeypatch) -> None:
    from engine.flow.spec import ModelSpec

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    class Real(OneAgent):
        MODELS = {"main": ModelSpec("main", "anthropic", "claude-sonnet")}
        RETRIES = {"r": RetrySpec("r", 3, "exponential")}
        AGENTS = {"worker": AgentSpec("worker", instruction="p", retry="r")}

    handle = await harness.run(Real, None)
    assert handle.status is RunStatus.FAILED
    assert "ANTHROPIC_API_KEY" in handle.error and "--script" in handle.error
    assert not any("retry" in e["message"] for e in events(handle, "log"))  # not retried
    # With a script, the same agent is answered offline.
    handle = await harness.run(Real, "agents:\n  worker: ['offline answer']\n")
    assert handle.result == "offline answer", handle.error


async def test_many_runs_each_decision_reaches_its_own_run(harness) -> None:
    from pathlib import Path

    from engine.kernel.model import Response, ResponseType
    from engine.runtime.engine import CompiledWorkflow

    script = """
agents:
  worker:
    - escalate: {reason: architecture_decision, question: "Pick", options: [{id: a, label: A}, {id: b, label: B}]}
    - text: "chose a"
      when: "Chosen option: a"
    - text: "chose b"
      when: "Chosen option: b"
"""
    engine = harness.engine(script)
    handles = [engine.start_run(CompiledWorkflow(Path("wf.sr"), "wf", OneAgent), input=str(i)) for i in range(8)]
    for _ in range(300):
        await asyncio.sleep(0.01)
        if len(engine.broker.pending()) == 8:
            break
    pending = engine.broker.pending()
    assert len(pending) == 8
    wanted = {}
    for index, item in enumerate(reversed(pending)):  # answer in reverse order
        choice = "a" if index % 2 else "b"
        wanted[item.escalation.run_id] = f"chose {choice}"
        engine.broker.answer(item.escalation.id, Response(ResponseType.OPTION, selected_option=choice))
    await asyncio.gather(*(h.wait() for h in handles))
    assert {h.id: h.result for h in handles} == wanted


async def test_prompt_escalation_appends_an_adk_escalate_event(harness, monkeypatch) -> None:
    from engine.runtime.sessions import CallSessions

    escalate_authors: list[str] = []
    deleted: list[str] = []
    original = CallSessions.delete_session

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        # What an ADK parent reading the session would see, before its call drops it.
        session = await self.get_session(app_name=app_name, user_id=user_id, session_id=session_id)
        escalate_authors.extend(e.author for e in session.events if e.actions and e.actions.escalate)
        deleted.append(session_id)
        await original(self, app_name=app_name, user_id=user_id, session_id=session_id)

    monkeypatch.setattr(CallSessions, "delete_session", delete_session)
    handle = await harness.run(Resolver, "agents:\n  peer1: ['v1', 'DRIFTING']\n  peer2: ['v2']\n", input="v0")
    assert handle.result == "v2", handle.error
    assert escalate_authors == ["peer1"]
    assert len(deleted) == 3  # every call's session is dropped when the call returns


async def test_stop_inside_a_use_child_stops_the_run(harness) -> None:
    script = """
agents:
  coordinator:
    - tool: transfer_to_agent
      args: {agent_name: specialist}
  specialist:
    - tool: helper
      args: {request: "go"}
    - "never reached"
  helper:
    - escalate: {reason: test_failure, question: "Tests fail, go on?"}
    - "never reached"
"""
    handle = await harness.run(Hierarchy, script)  # test_failure defaults to stop (seed 004)
    assert handle.status is RunStatus.STOPPED, (handle.status, handle.error)
    assert events(handle, "decision")[0]["resolvedBy"] == "timeout_default"
