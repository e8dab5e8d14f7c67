"""escalate's side of ACP for one agent: what it does when the agent streams an update, asks for
a permission, reads or writes a file, or runs a command.

Updates become the run's `log` events, as plain text (control characters shown as signs, never
markup), one line at a time: messages and thoughts are gathered to the end of a line, tool calls
and plans are one line each. The agent's reply of a turn is its message chunks, capped.
Files and commands go through the rules and the workspace exactly as the built-in tools do
(`read_file`, `write_file`, `run_command`: a path outside the workspace is refused; a command
passes the shell analysis of rules/shell.py).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from engine.runtime.acp.permissions import decide_permission
from engine.runtime.acp.terminals import Terminals
from engine.runtime.acp.usage import TurnUsage
from engine.runtime.human import settle_tool
from engine.text_safety import visible

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

MAX_REPLY = 1_000_000  # characters of the agent's reply kept per turn
MAX_LOG_LINE = 2000  # characters of one log line
MAX_PENDING = 8000  # characters of an unfinished line held before it is logged anyway


class EscalateClient:
    """The SDK's `Client` for one ACP agent of a run."""

    def __init__(self, run: "RunState", agent: str) -> None:
        self.run = run
        self.agent = agent
        self.reply: list[str] = []
        self._reply_size = 0
        self._partial: dict[str, str] = {}  # "message" / "thought" -> text not yet logged
        self.terminals = Terminals(run.workspace)
        self.usage = TurnUsage(lambda text: self._log("usage", text))
        # The agent's requests that touch the run (permissions, files, commands), served by the
        # agent call's own task (call.py `_prompt`): a wait for a person, a rule's stop and a
        # durable run's recorded steps then happen in the run's context, not in the SDK's tasks.
        self.requests: asyncio.Queue[tuple[Callable[[], Awaitable[Any]], asyncio.Future[Any]]] = asyncio.Queue()

    # -- the turn's text --------------------------------------------------------------------

    def take_reply(self) -> str:
        """The turn's reply (and the log's last unfinished lines)."""
        self.flush()
        text, self.reply, self._reply_size = "".join(self.reply), [], 0
        return text

    def flush(self) -> None:
        for what, text in list(self._partial.items()):
            if text.strip():
                self._log(what, text)
        self._partial.clear()

    def _stream(self, what: str, text: str) -> None:
        held = self._partial.get(what, "") + text
        *lines, held = held.split("\n")
        for line in lines:
            if line.strip():
                self._log(what, line)
        if len(held) > MAX_PENDING:
            self._log(what, held)
            held = ""
        self._partial[what] = held

    def _log(self, what: str, text: str) -> None:
        text = visible(text.strip())
        if len(text) > MAX_LOG_LINE:
            text = text[:MAX_LOG_LINE] + " ..."
        prefix = "" if what == "message" else f"{what}: "
        self.run.emit("log", message=f"{self.agent}: {prefix}{text}", agent=self.agent, acp=what)

    # -- the SDK's Client protocol ---------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        kind = getattr(update, "session_update", "")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            text = getattr(update.content, "text", None)
            if not isinstance(text, str):
                text = f"[{getattr(update.content, 'type', 'content')}]"
            if kind == "agent_message_chunk":
                if self._reply_size < MAX_REPLY:
                    self.reply.append(text[: MAX_REPLY - self._reply_size])
                    self._reply_size += len(text)
                self._stream("message", text)
            else:
                self._stream("thought", text)
        elif kind == "tool_call":
            self.flush()
            status = f" [{update.status}]" if update.status else ""
            self._log("tool", f"{update.title} ({update.kind or 'other'}){status}")
        elif kind == "tool_call_update":
            if update.status or update.title:
                self.flush()
                self._log("tool", f"{update.title or update.tool_call_id}: {update.status or 'updated'}")
        elif kind == "usage_update":
            self.usage.update(update)
        elif kind == "plan":
            self.flush()
            entries = "; ".join(f"[{e.status}] {e.content}" for e in update.entries[:50])
            self._log("plan", entries or "(empty)")

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.flush()
        try:
            option = await self._served(lambda: decide_permission(self.run, self.agent, tool_call, options))
        except Exception:  # the task was stopped (a rule, a default): the turn is cancelled too
            option = None
        if option is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> Any:
        from acp.schema import ReadTextFileResponse

        result = await self._served(lambda: self._tool("read_file", {"path": path}))
        text = str(result.get("content", ""))
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max(0, (line or 1) - 1)
            text = "".join(lines[start:start + limit if limit is not None else None])
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        await self._served(lambda: self._tool("write_file", {"path": path, "content": content}))
        return None

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None, env: Any = None,
                              cwd: str | None = None, output_byte_limit: int | None = None, **kwargs: Any) -> Any:
        from acp.schema import CreateTerminalResponse

        async def create() -> str:
            await self._gate("run_command", {"command": Terminals.command_line(command, args or [])})
            return await self.terminals.create(command, args or [], env, cwd, output_byte_limit)

        return CreateTerminalResponse(terminal_id=await self._served(create))

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return self.terminals.output(terminal_id)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        return await self.terminals.wait(terminal_id)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        await self.terminals.kill(terminal_id)
        return None

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        await self.terminals.release(terminal_id)
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        from acp import RequestError

        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None

    # -- files and commands through the rules -----------------------------------------------------

    async def _served(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """`make()` run by the agent call's task; its result (or its exception) here."""
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.requests.put_nowait((make, done))
        return await done

    async def _gate(self, tool: str, args: dict[str, Any]) -> None:
        """The rules' verdict on this call, settled (a person when it says ASK); a refusal is the
        agent's error reply, a stop (StopTask) ends the task."""
        from acp import RequestError

        outcome = await settle_tool(self.run, self.agent, tool, args, self.run.desk.tool_verdict(self.run.task, tool, args))
        if not outcome.runs:
            raise RequestError(-32000, outcome.message or f"the call {tool} was denied")

    async def _tool(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """A built-in file tool, run after the rules allowed it; its error is the agent's error."""
        from acp import RequestError

        from engine.runtime.tools.fs import fs_functions

        await self._gate(tool, args)
        function = next(f for f in fs_functions(self.run.workspace, readonly=False) if f.__name__ == tool)
        result = await function(**args)
        if "error" in result:
            raise RequestError(-32000, str(result["error"]))
        return result

    async def close(self) -> None:
        await self.terminals.close()
