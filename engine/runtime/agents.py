"""AgentSpec -> ADK LlmAgent, recursively: `delegate` -> sub_agents, `use` -> agent tools.

Every agent gets: its instruction (prompt body, interpolated at each turn, plus the human
escalation protocol note), its model (scripted or real), its declared tools, the built-in
`ask_human` tool, `escalate_to_agent` when the policy names it as a source, and the callbacks
that gate tools through the rules and run the workflow's handlers.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from typing import TYPE_CHECKING, Any

from engine.escalation.protocol import PROTOCOL_NOTE
from engine.runtime import callbacks
from engine.runtime.models import agent_model_name, is_real, model_label, model_spec, real_model
from engine.runtime.scripted_model import scripted_model
from engine.flow.spec import AgentSpec
from engine.runtime.tools.registry import BUILTINS, ToolUnavailable, build_tools

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

log = logging.getLogger("escalate.runtime")


def adk_name(name: str) -> str:
    """ADK wants identifiers (and never 'user'); .sr names are kept where they already are."""
    if name.isidentifier() and name != "user":
        return name
    cleaned = re.sub(r"\W", "_", name) or "agent"
    return cleaned if cleaned.isidentifier() and cleaned != "user" else f"agent_{cleaned}"


def agent_prompt_names(spec: AgentSpec) -> list[str]:
    return [p for p in (spec.instruction, spec.prompt) if p]


def chosen_model(run: "RunState", key: str, spec: AgentSpec) -> Any:
    """The agent's ModelSpec: the run's override, else its prompts' model, else `main`."""
    workflow = run.workflow
    names = [run.model_overrides.get(key)]
    names += [workflow.PROMPTS[p].model for p in agent_prompt_names(spec) if p in workflow.PROMPTS]
    return model_spec(workflow, agent_model_name(workflow, names))


@functools.cache
def ask_human_tool() -> Any:
    """The `ask_human` tool, one for every agent of every run: it holds nothing of a run (the
    callbacks answer its call from the call's own context) and ADK never changes a tool, while
    building it reads the function's signature and docstring again (a waiting run held ~2 KB
    of it, and each run paid ~0.1 ms: tests/benchmarks/bench_run_memory.py)."""
    from engine.runtime.tools.declared import DeclaredLongRunningTool

    return DeclaredLongRunningTool(callbacks.ask_human)


class AgentFactory:
    """Builds the agent trees of one run and closes all of them at its end."""

    def __init__(self, run: "RunState") -> None:
        self.run = run
        self.created: list[Any] = []  # every LlmAgent and tool made, for close()
        self.names: dict[str, str] = {}  # ADK name -> .sr name
        self.offline: set[str] = set()  # MCP tools said to be left out of this scripted run

    def spec(self, key: str) -> AgentSpec:
        spec = self.run.agent_spec(key)
        if spec is None:
            raise ToolUnavailable(f"no agent named {key!r}")
        return spec

    def model_for(self, key: str, spec: AgentSpec) -> tuple[Any, bool]:
        """The agent's model, and whether it is the offline scripted one."""
        chosen = chosen_model(self.run, key, spec)
        scripted = self.run.script_given or not is_real(chosen)
        model = scripted_model(spec.name, self.run.cursor) if scripted else self._real(spec, chosen)
        if self.run.durable:
            from engine.runtime.recorded_model import RecordedModel

            model = RecordedModel(model=model.model, inner=model, cursor=self.run.cursor if scripted else None)
        return model, scripted

    def _real(self, spec: AgentSpec, chosen: Any) -> Any:
        """A provider model whose failed turns the agent's retry policy retries."""
        from engine.runtime.real_model import RealModel

        retry = self.run.workflow.RETRIES.get(spec.retry or "")
        inner = real_model(chosen)
        return RealModel(model=inner.model, inner=inner, label=model_label(chosen),
                         retries=retry.times if retry else 0, backoff=retry.backoff if retry else None,
                         on_retry=lambda message: self.run.emit("log", message=message, level="warning"))

    def instruction_for(self, spec: AgentSpec) -> Any:
        prompt = self.run.workflow.PROMPTS.get(spec.instruction or "")
        run = self.run

        # A provider (not a string): ADK would otherwise treat `{...}` in prompts as state keys.
        def provide(_readonly_context: Any) -> str:
            body = ""
            if prompt is not None and prompt.body is not None and run.context is not None:
                body = str(prompt.body(run.context))
            return f"{body}\n\n{PROTOCOL_NOTE}" if body else PROTOCOL_NOTE

        return provide

    def tools_for(self, spec: AgentSpec, *, scripted: bool) -> list[Any]:
        """The agent's tools. A scripted agent is offline: MCP servers are not connected (their
        tools are not offered; a scripted call to one gets ADK's "tool not found" answer), so
        the many real-world files that declare them run offline too."""
        from engine.runtime.tools.declared import DeclaredLongRunningTool

        tools: list[Any] = []
        for tool_name in spec.tools:
            tool_spec = self.run.workflow.TOOLS.get(tool_name)
            if tool_spec is not None and tool_spec.kind == "ref":
                tool_spec = self.run.workflow.TOOLS.get(tool_spec.target, tool_spec)
            if tool_spec is None:
                if tool_name not in BUILTINS:
                    raise ToolUnavailable(f"agent {spec.name!r}: no tool named {tool_name!r}")
                from engine.flow.spec import ToolSpec

                tool_spec = ToolSpec(name=tool_name, kind="builtin", target=tool_name)
            if scripted and tool_spec.kind == "mcp":
                self._offline_once(tool_spec.name, f"tool {tool_spec.name!r} (MCP server {tool_spec.target}) is not "
                                                   "connected in an offline scripted run: its tools are not offered")
                continue
            tools.extend(build_tools(tool_spec, self.run.workspace))
        tools.append(ask_human_tool())
        if self.run.agent_policy is not None and self.run.agent_policy.policy.is_source(spec.name):
            # Long-running: an approved target that waits for a person pauses its source on this call.
            tools.append(DeclaredLongRunningTool(callbacks.escalate_to_agent_tool(self.run, spec.name)))
        for child in spec.use:
            tools.append(callbacks.agent_tool(self.run, child, self._declaration_agent(child)))
        return tools

    def _offline_once(self, tool: str, message: str) -> None:
        if tool not in self.offline:
            self.offline.add(tool)
            self.run.emit("log", message=message, level="warning")

    def _declaration_agent(self, name: str) -> Any:
        """A bare agent that only gives a `use` tool its name and description; the child's
        real tree is built (and run) by the agent-call function in its own session."""
        from google.adk.agents import LlmAgent

        spec = self.spec(name)
        agent = LlmAgent(
            name=adk_name(name),
            description=spec.description or f"Agent: {name}",
            model=scripted_model(name, self.run.cursor),
        )
        self.created.append(agent)
        return agent

    def build(self, key: str) -> Any:
        from google.adk.agents import LlmAgent

        spec = self.spec(key)
        name = spec.name
        chosen = chosen_model(self.run, key, spec)
        if chosen is not None and chosen.acp_command is not None:  # only ever a delegate: a root answers in agent_call
            from engine.runtime.acp.delegate import AcpDelegate

            delegate = AcpDelegate.made(self.run, key, adk_name(name), spec.description or f"Agent: {name}")
            self.names[delegate.name] = name
            return delegate
        sub_agents = [self.build(child) for child in spec.delegate]
        model, scripted = self.model_for(key, spec)
        agent = LlmAgent(
            name=adk_name(name),
            description=spec.description or f"Agent: {name}",
            model=model,
            instruction=self.instruction_for(spec),
            tools=self.tools_for(spec, scripted=scripted),
            sub_agents=sub_agents,
            **callbacks.agent_callbacks(self.run, spec),
        )
        self.names[agent.name] = name
        self.created.append(agent)
        return agent

    async def close(self) -> None:
        """Close what was created, tools before the agents holding them."""
        for agent in reversed(self.created):
            for tool in getattr(agent, "tools", None) or []:
                close = getattr(tool, "close", None)
                if callable(close):
                    try:
                        result = close()
                        if inspect.isawaitable(result):
                            await result
                    except Exception:
                        log.debug("tool close failed", exc_info=True)
        self.created.clear()
