"""One ACP agent process: started in its own process group in the workspace, its protocol
version agreed, a session made (or loaded), prompts sent, cancelled, and ended with its group.

Every way it can fail is an `AcpFailure` with one line naming the agent and the cause: not
installed, exited (with its last stderr line), a wrong protocol version, a malformed or
flooding message, an error reply.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any, Awaitable, TypeVar

from engine.flow.flow_api import FlowError
from engine.flow.spec import acp_argv
from engine.runtime.acp.priority import CROWD, agent_niceness, lower_priority
from engine.runtime.acp.wire import MAX_MESSAGE, BoundedTransport, StderrTail

T = TypeVar("T")
PROTOCOL_VERSION = 1  # the ACP version escalate speaks
START_TIMEOUT = 60.0  # seconds for `initialize` and `session/new|load` (an agent that never answers)
END_GRACE = 2.0  # seconds the agent has to exit after its stdin closes, before its group is killed


class AcpFailure(FlowError):
    """An ACP agent failed: one line, naming it and the cause."""


class AgentProcess:
    def __init__(self, label: str, command: str, workspace: Path, client: Any) -> None:
        self.label = label  # how messages name it: `ACP agent 'coder' (gemini --experimental-acp)`
        self.command = command
        self.workspace = workspace
        self.client = client
        self.proc: asyncio.subprocess.Process | None = None
        self.conn: Any = None
        self.transport: BoundedTransport | None = None
        self.stderr: StderrTail | None = None
        self.can_load = False  # the agent said it supports `session/load`
        self.session_id: str | None = None
        self._lowering: asyncio.Task[None] | None = None  # its autogroup's priority, when the kernel said to wait
        self._in_crowd = False  # counted among the agents running (priority.py)

    async def start(self) -> None:
        """Start the process and agree on the protocol (raises AcpFailure)."""
        from acp import connect_to_agent
        from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

        try:
            argv = acp_argv(self.command)
            cap = agent_niceness()
        except ValueError as exc:  # an unsplittable command, a bad $ESCALATE_ACP_NICE
            raise AcpFailure(f"{self.label}: {exc}") from None
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *argv, cwd=self.workspace, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,  # its own group: ended whole
                limit=MAX_MESSAGE,
            )
        except FileNotFoundError:
            raise AcpFailure(f"{self.label}: not installed ({argv[0]!r} is not on PATH)") from None
        except (OSError, ValueError) as exc:
            raise AcpFailure(f"{self.label}: cannot start: {getattr(exc, 'strerror', None) or exc}") from None
        self._in_crowd = True
        self._lowering = lower_priority(self.proc.pid, CROWD.join(cap))
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.stderr = StderrTail(self.proc.stderr)
        self.transport = BoundedTransport(self.proc.stdout, self.proc.stdin)
        self.conn = connect_to_agent(self.client, self.transport)
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True)
        reply = await self.request(self.conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities,
            client_info=Implementation(name="escalate", version="1")), timeout=START_TIMEOUT)
        if reply.protocol_version != PROTOCOL_VERSION:
            raise AcpFailure(f"{self.label}: speaks ACP protocol version {reply.protocol_version}; escalate speaks "
                             f"version {PROTOCOL_VERSION}")
        caps = reply.agent_capabilities
        self.can_load = bool(caps is not None and caps.load_session)

    async def new_session(self) -> str:
        reply = await self.request(self.conn.new_session(cwd=str(self.workspace), mcp_servers=[]), timeout=START_TIMEOUT)
        self.session_id = str(reply.session_id)
        return self.session_id

    async def load_session(self, session_id: str) -> None:
        await self.request(self.conn.load_session(cwd=str(self.workspace), session_id=session_id, mcp_servers=[]),
                           timeout=START_TIMEOUT)
        self.session_id = session_id

    async def prompt(self, text: str) -> tuple[str, int | None]:
        """Send one prompt; once the turn ends, its stop reason and the tokens it used when the
        agent says (the reply's `usage`, unstable in ACP)."""
        from acp import text_block

        assert self.session_id is not None
        reply = await self.request(self.conn.prompt(session_id=self.session_id, prompt=[text_block(text)]))
        usage = reply.usage
        return str(reply.stop_reason), usage.total_tokens if usage is not None else None

    async def cancel(self) -> None:
        """`session/cancel`: the agent should stop the turn (best effort: it may be gone)."""
        if self.conn is None or self.session_id is None:
            return
        try:
            await asyncio.wait_for(self.conn.cancel(session_id=self.session_id), 1.0)
        except (Exception, asyncio.TimeoutError):
            pass

    async def request(self, made: Awaitable[T], timeout: float | None = None) -> T:
        """A request to the agent, its failures turned into one AcpFailure line. A request ends
        when the agent answers, breaks its stream, or exits."""
        from acp import RequestError
        from pydantic import ValidationError

        work = asyncio.ensure_future(made)
        exited = asyncio.ensure_future(self._exited())
        try:
            done, _ = await asyncio.wait({work, exited}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if work in done:
                return work.result()
            if exited in done:
                await asyncio.wait({work}, timeout=0.5)  # a reply read just before the end is handled first
                if work.done():
                    return work.result()
                raise AcpFailure(await self._why_gone())
            raise AcpFailure(f"{self.label}: no answer within {timeout:g} s")
        except RequestError as exc:
            raise AcpFailure(f"{self.label}: refused the request: {exc} ({exc.code}){_details(exc.data)}") from None
        except ValidationError as exc:
            raise AcpFailure(f"{self.label}: sent a reply that does not follow ACP ({exc.error_count()} errors, "
                             f"first: {exc.errors()[0].get('msg', '')})") from None
        except ConnectionError:
            raise AcpFailure(await self._why_gone()) from None
        finally:
            exited.cancel()
            if not work.done():
                work.cancel()

    async def _exited(self) -> None:
        """Ends when the agent's process exits or its stream broke (framing)."""
        assert self.proc is not None and self.transport is not None
        waits = {asyncio.ensure_future(self.proc.wait()), asyncio.ensure_future(self.transport.ended.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def _why_gone(self) -> str:
        if self.transport is not None and self.transport.failure is not None:
            return f"{self.label}: {self.transport.failure}"
        if self.proc is not None:  # its output ended: it is exiting; its code and last words, briefly awaited
            waits = [self.proc.wait()] + ([self.stderr.task] if self.stderr is not None and self.stderr.task else [])
            try:
                await asyncio.wait_for(asyncio.gather(*waits, return_exceptions=True), 1.0)
            except asyncio.TimeoutError:
                pass
        code = self.proc.returncode if self.proc is not None else None
        last = self.stderr.last() if self.stderr is not None else ""
        said = f": {last}" if last else ""
        if code is None:
            return f"{self.label}: closed its output{said}"
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return f"{self.label}: exited ({how}){said}"

    async def close(self) -> None:
        """End the agent and everything it started: its stdin closed, a short grace, then its
        whole process group killed; the pipes closed and the process reaped."""
        proc, self.proc = self.proc, None
        if self._lowering is not None:
            self._lowering.cancel()  # its pid is not written to after it is reaped
        if self._in_crowd:
            self._in_crowd = False
            CROWD.leave()
        if self.conn is not None:
            try:
                await asyncio.wait_for(self.conn.close(), 1.0)
            except (Exception, asyncio.TimeoutError):
                pass
        if proc is None:
            return
        if proc.returncode is None:
            try:
                await asyncio.wait_for(proc.wait(), END_GRACE)
            except asyncio.TimeoutError:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its children too, even when it exited itself
        except (ProcessLookupError, PermissionError):
            pass
        await proc.wait()
        if self.stderr is not None:
            self.stderr.cancel()


def _details(data: Any) -> str:
    """An error reply's own words (its `data`), on one short line."""
    if data is None:
        return ""
    text = data.get("details", data.get("message", data)) if isinstance(data, dict) else data
    text = " ".join(str(text).split())
    return f": {text[:300]}" if text else ""
