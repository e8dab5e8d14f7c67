"""The `terminal/*` client methods: commands an ACP agent runs, in the workspace, each in its own
process group, their output kept up to a byte limit (the oldest bytes dropped first, as ACP
says). The rules have already passed the command (client.py) before `create` runs it, in a
folder inside the workspace: with arguments, the program and its arguments as given (no shell);
without, the command is a shell line (as agents such as Claude Code's adapter send it) and runs
in `/bin/sh -c`, as the built-in `run_command` does: the rules' shell analysis read that line."""

from __future__ import annotations

import asyncio
import itertools
import os
import shlex
import signal
from typing import Any

from engine.runtime.acp.priority import CROWD, agent_niceness, lower_priority
from engine.runtime.tools.workspace import PathRefused, Workspace

DEFAULT_LIMIT = 64_000  # bytes of output kept when the agent names no limit
MAX_LIMIT = 4_000_000
MAX_TERMINALS = 32  # at once, per agent


class _Terminal:
    def __init__(self, proc: asyncio.subprocess.Process, limit: int, lowering: asyncio.Task[None] | None) -> None:
        self.proc = proc
        self.lowering = lowering  # its autogroup's priority, when the kernel said to wait (priority.py)
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self.output += chunk
            if len(self.output) > self.limit:
                del self.output[: len(self.output) - self.limit]
                self.truncated = True

    def exit_fields(self) -> dict[str, Any]:
        code = self.proc.returncode
        if code is None:
            return {}
        if code < 0:
            return {"exit_code": None, "signal": signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)}
        return {"exit_code": code, "signal": None}


class Terminals:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self._ids = itertools.count(1)
        self._open: dict[str, _Terminal] = {}

    @staticmethod
    def command_line(command: str, args: list[str]) -> str:
        """The command as one shell line, for the rules' shell analysis."""
        return shlex.join([command, *args]) if args else command

    async def create(self, command: str, args: list[str], env: Any, cwd: str | None, limit: int | None) -> str:
        from acp import RequestError

        if len(self._open) >= MAX_TERMINALS:
            raise RequestError(-32000, f"too many terminals open (at most {MAX_TERMINALS})")
        try:
            folder = self.workspace.resolve(cwd) if cwd else self.workspace.root
            nice = CROWD.offset(agent_niceness())  # the agents' level now (priority.py)
        except (PathRefused, ValueError) as exc:
            raise RequestError(-32000, str(exc)) from None
        environ = dict(os.environ)
        for var in env or ():
            environ[str(var.name)] = str(var.value)
        argv = [command, *args] if args else ["/bin/sh", "-c", command]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=folder, env=environ, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            raise RequestError(-32000, f"cannot run {command!r}: {getattr(exc, 'strerror', None) or exc}") from None
        terminal_id = f"term-{next(self._ids)}"
        self._open[terminal_id] = _Terminal(proc, max(0, min(limit or DEFAULT_LIMIT, MAX_LIMIT)), lower_priority(proc.pid, nice))
        return terminal_id

    def _get(self, terminal_id: str) -> _Terminal:
        from acp import RequestError

        found = self._open.get(terminal_id)
        if found is None:
            raise RequestError(-32002, f"no terminal {terminal_id!r}")
        return found

    def output(self, terminal_id: str) -> Any:
        from acp.schema import TerminalExitStatus, TerminalOutputResponse

        t = self._get(terminal_id)
        fields = t.exit_fields()
        return TerminalOutputResponse(output=t.output.decode("utf-8", "replace"), truncated=t.truncated,
                                      exit_status=TerminalExitStatus(**fields) if fields else None)

    async def wait(self, terminal_id: str) -> Any:
        from acp.schema import WaitForTerminalExitResponse

        t = self._get(terminal_id)
        await t.proc.wait()
        await t.reader
        return WaitForTerminalExitResponse(**t.exit_fields())

    async def kill(self, terminal_id: str) -> None:
        t = self._get(terminal_id)
        _kill_group(t.proc)
        await t.proc.wait()

    async def release(self, terminal_id: str) -> None:
        t = self._open.pop(terminal_id, None)
        if t is not None:
            if t.lowering is not None:
                t.lowering.cancel()
            _kill_group(t.proc)
            await t.proc.wait()
            t.reader.cancel()

    async def close(self) -> None:
        for terminal_id in list(self._open):
            await self.release(terminal_id)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
