"""A workflow agent backed by an ACP command: one agent process and session per run and agent,
kept across the run's calls of that agent, ended with the run.

A call (agent_call.py `_converse_acp`, which handles the reply as a model's: escalation JSON,
output handlers, `expecting`, `escalate if`) sends prompts through `AcpAgent.turn`: the first
one of the session carries the agent's instruction and seed 004's protocol note, a call's first
one the `history` messages the session does not hold yet. The session takes one prompt at a
time, so calls of the agent queue (`AcpAgent.call`). Each turn asks the run's budget first and
counts its tokens after (usage.py). Stopping the run sends `session/cancel` and ends the agent's
process group.

Durable runs: the session's id and each turn's reply and tokens are recorded steps. A run continued after
a crash replays them without the agent; its first live turn starts the agent again and loads
the recorded session (`session/load`) when the agent supports it, else starts a new session
whose first prompt summarises the recorded conversation; the log says which.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, AsyncIterator

from engine.durable.steps import step
from engine.escalation import protocol
from engine.flow.flow_api import FlowError, StopTask
from engine.flow.spec import AgentSpec
from engine.runtime.acp.client import EscalateClient
from engine.runtime.acp.process import AcpFailure, AgentProcess

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

SUMMARY_TURNS = 20  # the last turns a new session's summary repeats
SUMMARY_CHARS = 1500  # of each prompt and reply in it


def acp_command(run: "RunState", key: str, spec: AgentSpec) -> str | None:
    """The ACP command behind this agent (its prompt's model, else `main`), or None."""
    from engine.runtime.agents import chosen_model

    chosen = chosen_model(run, key, spec)
    return chosen.acp_command if chosen is not None else None


def acp_agent(run: "RunState", key: str, spec: AgentSpec, command: str) -> "AcpAgent":
    """The run's one ACP agent for this agent key (made on its first call)."""
    agents: dict[str, AcpAgent] = run.acp_agents
    agent = agents.get(key)
    if agent is None:
        agent = agents[key] = AcpAgent(run, key, spec, command)
    return agent


# The ACP agents whose call is in progress in this context: a call made inside one (an output
# handler that runs the same agent) goes on in its session instead of waiting for the lock its
# own caller holds.
_HOLDING: ContextVar[frozenset[str]] = ContextVar("escalate_acp_holding", default=frozenset())


class AcpAgent:
    """One agent of a run: its process (when live), its session, its conversation so far."""

    def __init__(self, run: "RunState", key: str, spec: AgentSpec, command: str) -> None:
        self.run = run
        self.key = key
        self.spec = spec
        self.label = f"ACP agent {spec.name!r} ({command})"
        self.command = command
        self.client = EscalateClient(run, spec.name)
        self.process: AgentProcess | None = None
        self.session_id: str | None = None
        self.transcript: list[tuple[str, str]] = []  # (prompt, reply) of each turn, live or replayed
        self.summary = ""  # a new session's account of the recorded conversation, sent once
        self.held: set[str] = set()  # texts the session was given or said (history not sent twice)
        self._introduced = False
        self._notice = ""  # the budget notice the session was last told
        self._lock = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def call(self) -> AsyncIterator["AcpAgent"]:
        """One call of the agent: its session takes one prompt at a time, so calls of the same
        agent (parallel branches) queue, each with all its rounds (an escalation's decision is
        the next prompt, with no other call's prompt between)."""
        holding = _HOLDING.get()
        if self.key in holding:
            yield self
            return
        async with self._lock:
            token = _HOLDING.set(holding | {self.key})
            try:
                yield self
            finally:
                _HOLDING.reset(token)

    def opening(self, message: str, history: list[tuple[str, str]]) -> str:
        """A call's first prompt: the session's introduction (its first one), the `history`
        messages the session does not already hold, then the message."""
        fresh = [(role, text) for role, text in history if text not in self.held]
        self.held.update(text for _role, text in fresh)
        self.held.add(message)
        earlier = ""
        if fresh:
            lines = [f"### {'You' if role == 'assistant' else 'User'}\n{text}" for role, text in fresh]
            earlier = "## Earlier messages of this conversation\n\n" + "\n\n".join(lines) + "\n\n## Message\n"
        return self.first_words() + earlier + message

    def first_words(self) -> str:
        """The session's first prompt starts with the instruction and the protocol note."""
        if self._introduced:
            return ""
        self._introduced = True
        return self._intro()

    def _intro(self) -> str:
        parts = [self._instruction(), protocol.PROTOCOL_NOTE, "## Task"]
        return "\n\n".join(p for p in parts if p) + "\n"

    def _instruction(self) -> str:
        prompt = self.run.workflow.PROMPTS.get(self.spec.instruction or "")
        if prompt is None or prompt.body is None:
            return ""
        try:
            return str(prompt.body(self.run.context))
        except Exception as exc:  # a body that cannot be evaluated here: said, not fatal
            self.run.emit("log", message=f"{self.label}: instruction not sent ({exc})", level="warning")
            return ""

    async def turn(self, text: str) -> str:
        """One prompt and its reply, a recorded step of a durable run. The run's budget is
        asked first (a warning, a stop: as before an ADK agent's model turn), and counts the
        turn's tokens after (`usage.py`); a durable run replays them with the reply."""
        budget = self.run.budget
        await budget.before_turn(self.run, self.spec.name)
        if budget.notice and budget.notice != self._notice:  # told once, as ADK appends it to the instruction
            self._notice = budget.notice
            text = f"{budget.notice}\n\n{text}"
        if self.session_id is None:
            self.session_id = str(await step("acp-session", self._open_new))

        async def live() -> dict[str, Any]:
            await self._live()
            return await self._prompt(text)

        done = await step("acp-turn", live)
        reply, tokens = turn_record(done)
        budget.add(tokens)
        self.held.add(reply)
        self.transcript.append((text, reply))
        return reply

    async def _open_new(self) -> str:
        await self._start()
        assert self.process is not None
        return await self.process.new_session()

    async def _start(self) -> None:
        self.process = AgentProcess(self.label, self.command, self.run.workspace.root, self.client)
        try:
            await self.process.start()
        except BaseException:
            await self.close()
            raise

    async def _live(self) -> None:
        """A process holding this session: after a crash, started again; the session loaded
        where the agent supports it, else a new one told the conversation so far."""
        if self.process is not None:
            return
        await self._start()
        assert self.process is not None and self.session_id is not None
        if self.process.can_load:
            try:
                await self.process.load_session(self.session_id)
                self.run.emit_live("log", message=f"{self.label}: started again; loaded its session {self.session_id}")
                return
            except AcpFailure as exc:
                self.run.emit_live("log", message=f"{exc}; starting a new session instead", level="warning")
        self.session_id = await self.process.new_session()
        self.summary = self._intro().removesuffix("## Task\n") + summary(self.transcript)  # a new session: told again
        self.run.emit_live("log", message=f"{self.label}: started again; it cannot load its session, so a new session "
                                          f"{self.session_id} gets a summary of the {len(self.transcript)} recorded turns")

    async def _prompt(self, text: str) -> dict[str, Any]:
        assert self.process is not None
        if self.summary:
            text, self.summary = f"{self.summary}\n\n{text}", ""
        client = self.client
        client.usage.start_turn()
        sent = asyncio.ensure_future(self.process.prompt(text))
        try:
            await self._serve(sent)
            stop_reason, said_tokens = sent.result()
        except asyncio.CancelledError:  # the run is stopped: the agent is told, then ended
            await asyncio.shield(self._cancel_and_end())
            raise
        finally:
            if not sent.done():
                sent.cancel()
            elif not sent.cancelled():
                sent.exception()  # retrieved: a prompt that failed as the run stopped is no stray error
        reply = client.take_reply()
        if stop_reason not in ("end_turn", "EndTurn"):
            self.run.emit("log", message=f"{self.label}: turn ended: {stop_reason}")
        return {"reply": reply, "tokens": client.usage.turn_tokens(said_tokens)}

    async def _serve(self, sent: "asyncio.Future[str]") -> None:
        """Serve the agent's requests (client.py `_served`), one at a time, until the turn ends.
        A request that stops the task (StopTask) cancels the turn and ends the call."""
        requests = self.client.requests
        while True:
            getter = asyncio.ensure_future(requests.get())
            await asyncio.wait({sent, getter}, return_when=asyncio.FIRST_COMPLETED)
            if not getter.done():
                getter.cancel()
                return
            make, done = getter.result()
            try:
                result = await make()
            except (FlowError, StopTask) as exc:  # a stop, an escalation that cannot be carried out
                if not done.done():
                    done.set_exception(exc)
                assert self.process is not None
                await self.process.cancel()
                raise
            except Exception as exc:  # the agent's error reply (a refused path or command)
                if not done.done():
                    done.set_exception(exc)
                continue
            if not done.done():
                done.set_result(result)

    async def _cancel_and_end(self) -> None:
        if self.process is not None:
            await self.process.cancel()
        await self.close()

    async def close(self) -> None:
        process, self.process = self.process, None
        await self.client.close()
        if process is not None:
            await process.close()


def turn_record(done: Any) -> tuple[str, int]:
    """A turn's recorded step: its reply and tokens (a reply alone, as recorded before tokens
    were counted, counts none)."""
    if isinstance(done, dict):
        tokens = done.get("tokens")
        return str(done.get("reply", "")), tokens if isinstance(tokens, int) and tokens > 0 else 0
    return str(done), 0


def summary(transcript: list[tuple[str, str]]) -> str:
    """The recorded conversation, for a session that cannot be loaded."""
    def cut(text: str) -> str:
        return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + " ..."

    turns = transcript[-SUMMARY_TURNS:]
    lines = ["## Earlier in this task (your previous session was lost; this is what was said)"]
    if len(transcript) > len(turns):
        lines.append(f"({len(transcript) - len(turns)} earlier turns left out)")
    for prompt, reply in turns:
        lines += [f"### Prompt\n{cut(prompt)}", f"### Your reply\n{cut(reply)}"]
    return "\n\n".join(lines)


async def close_agents(run: "RunState") -> None:
    """End every ACP agent of the run (its process groups)."""
    agents: dict[str, Any] = run.acp_agents
    for agent in list(agents.values()):
        await agent.close()
    agents.clear()
