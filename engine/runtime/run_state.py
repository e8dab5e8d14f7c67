"""Everything one run owns: ids, the script cursor, the workspace, the event sink, the ADK
session service and the runners it built. Runs never share any of it (the engine shares only
the escalation desk, the broker and the agent policy, which are keyed by run)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from engine.runtime.events import EventSink
from engine.runtime.script import Script
from engine.flow.spec import AgentSpec, WorkflowBase
from engine.runtime.tools.workspace import Workspace

if TYPE_CHECKING:
    from engine.runtime.budget import RunBudget
    from engine.runtime.context import RunContext
    from engine.runtime.script_cursor import ScriptCursor

log = logging.getLogger("escalate.runtime")


async def _unwired(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a run's services are given by the runner")


@dataclass
class RunState:
    run_id: str
    task: str
    workflow: WorkflowBase
    script: Script
    script_given: bool  # a --script makes every agent scripted, real models or not
    workspace: Workspace
    sink: EventSink
    desk: Any  # engine.escalation.desk.EscalationDesk
    agent_policy: Any  # engine.escalation.agent_policy handler, or None
    clock: Any
    on_waiting: Callable[[bool], None] = lambda waiting: None  # run status: waiting on a human
    on_tokens: Callable[[int], None] = lambda used: None  # the run's token count went up
    durable: bool = False  # a DBOS workflow: model turns and tool calls are recorded steps
    # The services a run's parts use, given by the runner (engine/runtime/runner.py) rather than
    # imported back: call an agent, decide an escalation (emit is below).
    call_agent: Callable[..., Awaitable[Any]] = field(default=_unwired, repr=False)
    decide: Callable[..., Awaitable[Any]] = field(default=_unwired, repr=False)
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    context: "RunContext | None" = None
    _cursor: "ScriptCursor | None" = None
    _budget: "RunBudget | None" = None
    _session_service: Any = None
    _runners: dict[str, Any] = field(default_factory=dict)
    _factory: Any = None
    _llm_agents: dict[str, AgentSpec] = field(default_factory=dict)  # `call llm` one-off agents
    model_overrides: dict[str, str] = field(default_factory=dict)  # agent key -> model name
    # Agent calls started in a tool that wait for a person, by the paused tool call's id
    # (engine/runtime/child_calls.py): the caller's agent call takes them up at the flow level.
    suspended: dict[str, Any] = field(default_factory=dict)
    acp_agents: dict[str, Any] = field(default_factory=dict)  # ACP agents' processes (engine/runtime/acp/call.py)

    def agent_spec(self, key: str) -> AgentSpec | None:
        spec = self.workflow.AGENTS.get(key)
        return spec if spec is not None else self._llm_agents.get(key)

    def register_llm_agent(self, name: str, model: str | None) -> str:
        """A one-off agent (`call llm PROMPT`, a history summary) named after the prompt or
        policy, which is also its key in a --script file."""
        key = f"llm:{name}"
        if key not in self._llm_agents:
            prompt = name if name in self.workflow.PROMPTS else None
            self._llm_agents[key] = AgentSpec(name=name, prompt=prompt)
        if model:
            self.model_overrides[key] = model
        return key

    @property
    def cursor(self) -> "ScriptCursor":
        if self._cursor is None:
            from engine.runtime.script_cursor import ScriptCursor

            self._cursor = ScriptCursor(self.script)
        return self._cursor

    @property
    def budget(self) -> "RunBudget":
        """The run's token count against its budget in the rules (engine/runtime/budget.py)."""
        if self._budget is None:
            from engine.runtime.budget import RunBudget

            self._budget = RunBudget(self.desk.rules.budget(self.task), self.on_tokens)
        return self._budget

    @property
    def session_service(self) -> Any:
        if self._session_service is None:
            from engine.runtime.sessions import CallSessions

            self._session_service = CallSessions()
        return self._session_service

    def emit(self, type_: str, **fields: Any) -> None:
        self.sink.emit(type_, **fields)

    def emit_live(self, type_: str, **fields: Any) -> None:
        """An event no replay emits (EventSink.emit_live)."""
        self.sink.emit_live(type_, **fields)

    def runner_for(self, agent: str) -> Any:
        """The ADK runner whose root is `agent` (built once per run, reused by every call)."""
        runner = self._runners.get(agent)
        if runner is None:
            from google.adk.runners import Runner

            from engine.runtime.agents import AgentFactory

            if self._factory is None:
                self._factory = AgentFactory(self)
            root = self._factory.build(agent)
            runner = Runner(app_name=f"escalate-{self.run_id}", agent=root, session_service=self.session_service)
            self._runners[agent] = runner
        return runner

    def spec_name(self, adk_author: str) -> str:
        """The workflow's name of the agent ADK knows as `adk_author` (ADK wants identifiers)."""
        factory = self._factory
        return factory.names.get(adk_author, adk_author) if factory is not None else adk_author

    async def close(self) -> None:
        """Close every runner, agent and tool the run created (depth-first)."""
        for child in self.suspended.values():
            child.cancel()
        self.suspended.clear()
        if self.acp_agents:
            from engine.runtime.acp.call import close_agents

            await close_agents(self)
        for runner in self._runners.values():
            try:
                await runner.close()
            except Exception:  # closing must not hide the run's own outcome
                log.debug("runner close failed", exc_info=True)
        if self._factory is not None:
            await self._factory.close()
        self._runners.clear()
        self.sink.close()
