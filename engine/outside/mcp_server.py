"""`escalate mcp`'s server: the tool `escalate_to_human` on the official `mcp` package's
low-level Server, asking through the outside agents' desk (engine/outside/core.py).

A call is a seed 004 escalation of the MCP session's run (one run per client, project and task),
raised under the client's `requestId` (else a key of its own): asked again with the same
`requestId` after a disconnection or a restart, it is the same escalation, and once decided
its decision comes back at once. While a person has not answered, the call sends progress
notifications (clients time tool calls out). The `mcp` package is imported here only, when the
command runs.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.durable.urls import DatabaseError
from engine.kernel.errors import EscalationError
from engine.kernel.model import Decision, Escalation
from engine.outside.core import OutsideDesk, OutsideError, Session, Waiting
from engine.outside.mcp_tool import DESCRIPTION, INPUT_SCHEMA, OUTPUT_SCHEMA, TOOL_NAME, BadArguments, parse, result

if TYPE_CHECKING:
    import mcp_types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext

SERVER_NAME = "escalate"
INSTRUCTIONS = ("escalate is the desk where the person supervising you decides. Call escalate_to_human "
                "to ask them; the call returns their decision (or the rules' default when nobody answers "
                "in time).")
_CLIENT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class EscalateTool:
    """The tool's behaviour, whatever the transport: one desk, the project and task it asks for.

    A call with a `requestId` waits in a task of its own, which the call only watches: a client
    that cancels or drops the call (a client's tool timeout, a reconnection) leaves it waiting,
    the process keeps its session's run alive, and the next call with the same `requestId` watches
    the same wait. Without a `requestId` nobody can come back for it: the call cancelled, it is
    withdrawn."""

    def __init__(self, desk: OutsideDesk, project: Path, task: str | None) -> None:
        self.desk = desk
        self.project = project
        self.task = task
        self._waits: dict[str, asyncio.Task[Decision]] = {}  # escalation id -> the wait for it
        self._watchers: dict[str, list[ProgressSink]] = {}  # escalation id -> the calls watching it

    def session(self, client: str) -> Session:
        """The MCP client's session in this project: one run, whatever the process serving it,
        so a requestId asked again after a restart is found."""
        task = self.task or self.project.name or "project"
        return Session.of("mcp", f"{client}:{task}:{self.project}", self.project, task=task, agent=client)

    async def call(self, arguments: object, client: str, progress: "ProgressSink") -> dict[str, Any]:
        """The decision as the tool's result, or BadArguments / OutsideError (one line)."""
        ask = parse(arguments)
        asker = self.session(client)
        key = ask.request_id or f"call-{uuid.uuid4().hex}"
        esc_id = await asyncio.to_thread(self.desk.free_id, asker, key, kept=ask.request_id is not None)
        wait = self._waits.get(esc_id)
        if wait is None:
            wait = asyncio.ensure_future(self._wait(asker, ask.escalation, key, esc_id, kept=ask.request_id is not None))
            self._waits[esc_id] = wait
            wait.add_done_callback(lambda _: self._waits.pop(esc_id, None))
        watchers = self._watchers.setdefault(esc_id, [])
        watchers.append(progress)
        try:
            decision = await asyncio.shield(wait)
        except asyncio.CancelledError:
            if not _being_cancelled():  # the wait, not this call: withdrawn elsewhere
                raise OutsideError(f"{esc_id} was withdrawn before anyone decided it") from None
            if ask.request_id is None:  # nobody can come back for it (the wait withdraws it)
                wait.cancel()
            raise
        finally:
            watchers.remove(progress)
        return result(asker.task, ask.escalation, decision)

    async def _wait(self, asker: Session, escalation: Escalation, key: str, esc_id: str, *, kept: bool) -> Decision:
        async def waiting(state: Waiting) -> None:
            when = "" if state.deadline is None else " (the rules' default applies at its deadline)"
            for sink in list(self._watchers.get(esc_id, ())):
                try:
                    await sink(state.waited, f"waiting for a human to decide {state.escalation_id}{when}")
                except Exception:  # that call's client is gone (a closed stream): the wait goes on
                    pass

        try:
            return await self.desk.decide(asker, escalation, key=key, on_progress=waiting, kept=kept)
        except asyncio.CancelledError:
            if not kept:  # its call gone or the server stopping: withdrawn, never decided into nothing
                await asyncio.to_thread(self.desk.withdraw, esc_id)
            raise
        finally:
            self._watchers.pop(esc_id, None)

    async def close(self) -> None:
        """Stop waiting here (the server stops): what has a requestId stays pending for its client,
        the rest is withdrawn."""
        waits = list(self._waits.values())
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class ProgressSink:
    """Sends `notifications/progress` for the call being served (nothing when the client asked
    for none: the SDK drops it)."""

    def __init__(self, ctx: "ServerRequestContext[Any, Any]") -> None:
        self.ctx = ctx

    async def __call__(self, waited: float, message: str) -> None:
        await self.ctx.session.report_progress(round(waited, 1), None, message)


def client_name(ctx: "ServerRequestContext[Any, Any]") -> str:
    """The agent name of the calling client (its `clientInfo.name`, reduced to a safe name)."""
    params = ctx.session.client_params
    raw = params.client_info.name if params is not None and params.client_info is not None else ""
    name = _CLIENT_NAME.sub("-", raw).strip("-.")[:40]
    return name or "mcp"


def build_server(tool: EscalateTool) -> "Server[Any]":
    """The MCP server with the one tool."""
    import mcp_types as types
    from mcp.server import Server

    listed = types.Tool(name=TOOL_NAME, title="Ask the human", description=DESCRIPTION, input_schema=INPUT_SCHEMA,
                        output_schema=OUTPUT_SCHEMA)

    async def list_tools(ctx: Any, params: Any) -> "mcp_types.ListToolsResult":
        return types.ListToolsResult(tools=[listed])

    async def call_tool(ctx: "ServerRequestContext[Any, Any]",
                        params: "mcp_types.CallToolRequestParams") -> "mcp_types.CallToolResult":
        if params.name != TOOL_NAME:
            return _error(types, f"unknown tool {params.name[:60]!r}: this server has only {TOOL_NAME}")
        try:
            answer = await tool.call(params.arguments, client_name(ctx), ProgressSink(ctx))
        except (BadArguments, OutsideError, DatabaseError, EscalationError) as exc:
            return _error(types, f"{TOOL_NAME}: {exc}")
        text = json.dumps(answer, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=answer)

    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("escalate")
    except PackageNotFoundError:  # a source tree never installed
        ours = "0"
    return Server(SERVER_NAME, version=ours, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def _error(types: Any, message: str) -> "mcp_types.CallToolResult":
    """A tool error the client shows the model (so it can correct its call)."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


async def serve_stdio(server: "Server[Any]") -> None:
    """Serve on this process's stdin and stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    except* (BrokenPipeError, ConnectionResetError):  # the client went away mid-write (killed): done too
        pass
