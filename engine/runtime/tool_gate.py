"""Tool calls through the rules: the one place a tool call is allowed, denied, stopped or sent to
a person (who approves or denies it at the flow level, after the agent paused on ADK's
confirmation request)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.runtime.child_calls import human_wait
from engine.flow.flow_api import StopTask

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState


async def gate_tool(run: "RunState", agent: str, tool: str, args: dict[str, Any]) -> Any:
    """The rules' verdict on one tool call, after a human where they say so (the desk emits
    `tool_call`). Returns the desk's verdict (`allowed`, `confirmed`, `denied`, with the text the
    agent is told); raises StopTask when a rule says stop."""

    def approval() -> Any:
        return run.desk.approve_tool(run.run_id, run.task, agent, tool, dict(args))

    if run.desk.tool_verdict(run.task, tool, dict(args)) == "ask":
        verdict = await human_wait(run, approval)
    else:
        verdict = await approval()
    if verdict == "stop":
        raise StopTask(getattr(verdict, "message", "") or f"a rule stopped the task at the call to {tool}")
    return verdict
