"""One `run_async` of an agent call's ADK session: the events of one invocation.

ADK 2's `Runner.run_async` runs a root `LlmAgent` as a node of its workflow runtime: per
invocation, a clone of the agent (`build_node`), a scheduler and its tasks, node contexts, an
event queue between tasks, invocation spans. For an agent with no delegates, none of that changes
what the agent does: its `LlmAgent.run_async(InvocationContext)` (ADK's public entry for running
an agent in a context, the one its node wrapper calls) runs the same flow, callbacks, tools and
pauses. Driven directly, as ADK 1's Runner did (the user's event appended, then each finished
event as it comes, before the agent goes on), a scripted turn costs ~40% fewer Python calls and
about half the CPU (docs/durable.md "What a turn costs", the fifth pass).

The Runner still runs a call whose agent has delegates (it routes each message to the agent that
spoke last) and every call in a process where OpenTelemetry is set up (its invocation spans are
then wanted).
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any, AsyncIterator


def runs_directly(runner: Any, traced: bool) -> bool:
    """Whether this runner's calls are driven without its node runtime (on a run's own sessions,
    whose stored session the invocation drives: `CallSessions.held`)."""
    from google.adk.agents import LlmAgent

    from engine.runtime.sessions import CallSessions

    agent = runner.agent
    return (not traced and isinstance(agent, LlmAgent) and not agent.sub_agents and runner.plugin_manager.plugins == []
            and isinstance(runner.session_service, CallSessions))


async def run_async(runner: Any, *, user_id: str, session_id: str, new_message: Any, run_config: Any,
                    traced: bool) -> AsyncIterator[Any]:
    """The events of one invocation of the runner's agent on `new_message`, as `Runner.run_async`."""
    if not runs_directly(runner, traced):
        async with aclosing(runner.run_async(user_id=user_id, session_id=session_id, new_message=new_message,
                                             run_config=run_config)) as events:
            async for event in events:
                yield event
        return
    from google.adk.agents import RunConfig
    from google.adk.agents.invocation_context import InvocationContext, new_invocation_context_id
    from google.adk.events import Event

    sessions = runner.session_service
    session = sessions.held(app_name=runner.app_name, user_id=user_id, session_id=session_id)  # the stored one, not a copy
    if session is None:
        raise ValueError(f"Session not found: {session_id}")
    context = InvocationContext(
        session_service=sessions, invocation_id=new_invocation_context_id(), agent=runner.agent, session=session,
        user_content=new_message, run_config=run_config or RunConfig(), plugin_manager=runner.plugin_manager,
    )
    try:
        await sessions.append_event(session, Event(invocation_id=context.invocation_id, author="user", content=new_message))
        async with aclosing(runner.agent.run_async(context)) as events:
            async for event in events:
                if not event.partial:
                    await sessions.append_event(session, event)
                yield event
    finally:
        sessions.invocation_over(session)
