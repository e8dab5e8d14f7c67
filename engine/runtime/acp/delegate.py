"""An ACP agent as the `delegate` of an ADK agent: the ADK sub-agent its parent transfers to.

It answers the message its parent was given (the invocation's user message) through one agent
call of its own (`run.call_agent`: the ACP session, the desk for its questions and permissions,
its input and output handlers, its `expecting` schema and `escalate if`, the budget), and its
reply is the sub-agent's reply, as an ADK delegate's would be. Imported only when a workflow
delegates to an ACP agent (ADK is heavy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, AsyncGenerator

from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.genai import types
from pydantic import PrivateAttr

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState


class AcpDelegate(BaseAgent):
    _run: Any = PrivateAttr(default=None)
    _key: str = PrivateAttr(default="")

    @classmethod
    def made(cls, run: "RunState", key: str, name: str, description: str) -> "AcpDelegate":
        agent = cls(name=name, description=description)
        agent._run, agent._key = run, key
        return agent

    async def _run_async_impl(self, ctx: Any) -> AsyncGenerator[Event, None]:
        content = ctx.user_content
        message = "".join(p.text or "" for p in (content.parts or []) if not p.thought) if content is not None else ""
        outcome = await self._run.call_agent(self._key, message)
        yield Event(author=self.name, invocation_id=ctx.invocation_id, branch=ctx.branch,
                    content=types.Content(role="model", parts=[types.Part.from_text(text=outcome.text)]))
