"""`escalate_to_agent` (seed 002): an agent hands a task to a more specialised one.

The engine's policy handler decides (paths, loops, depth, target choice). Approved, the target
runs the task through the one agent-call function and its answer is the tool's result; denied,
the agent gets the reason and the fallbacks. Either way an `agent_escalation` event is emitted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.escalation.agent_policy import AgentEscalationRequest, AgentEscalationResponse, agent_key
from engine.runtime.frames import current

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState


def workflow_agent(run: "RunState", name: str) -> str | None:
    """The workflow's agent for a policy name (`codebase-analyzer` finds `codebase_analyzer`)."""
    if name in run.workflow.AGENTS:
        return name
    wanted = agent_key(name)
    return next((a for a in run.workflow.AGENTS if agent_key(a) == wanted), None)


async def escalate_to_agent(
    run: "RunState", source: str, reason: str, task: str, suggested_target: str, call_id: str | None = None
) -> dict[str, Any] | None:
    """The tool's result; None when the approved target waits for a person (child_calls.py):
    the source then pauses on this call until the target is done."""
    from engine.durable.steps import step
    from engine.runtime.child_calls import call_in_tool

    frame = current()
    chain = frame.escalation_chain if frame is not None else ()
    request = AgentEscalationRequest(str(source), str(reason), str(task), str(suggested_target or ""), chain)

    async def decide() -> Any:
        # Only the workflow's own agents can be chosen, so a missing target is never recorded as
        # an approved hop (which would later look like a loop).
        return run.agent_policy.handle(request, available=run.workflow.AGENTS)

    # A recorded step: the policy reads the clock and the history, which a replay must not ask
    # again. Recorded as JSON (a list of the fields), rebuilt here live and on replay alike.
    response = AgentEscalationResponse.from_json(await step("agent escalation", decide))
    target = workflow_agent(run, response.target_agent) if response.approved else None
    if response.approved and target is None:
        run.emit(
            "agent_escalation", source=source, target=response.target_agent, approved=False,
            reason=f"no agent named {response.target_agent!r} in this workflow", fallbacks=list(response.fallbacks),
        )
        return {"approved": False, "reason": f"no agent named {response.target_agent} here", "fallbacks": list(response.fallbacks)}
    run.emit("agent_escalation", **response.to_event_fields(source))
    if not response.approved:
        return {"approved": False, "reason": response.reason, "fallbacks": list(response.fallbacks)}
    async def target_call() -> dict[str, Any]:
        outcome = await run.call_agent(target, response.task, chain=chain + (source,))
        return {"approved": True, "target": target, "result": outcome.value}

    return await call_in_tool(run, call_id, target_call)
