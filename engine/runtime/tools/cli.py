"""`builtin streetrace.cli`: run a shell command in the workspace with a time limit."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any, Callable

from engine.runtime.tools.workspace import Workspace

MAX_OUTPUT = 64_000


def cli_functions(workspace: Workspace, *, time_limit: float = 60.0) -> list[Callable[..., Any]]:
    async def run_command(command: str) -> dict[str, Any]:
        """Run a shell command in the workspace folder and return its exit code and output."""
        # `command` was checked to be a string (tools/arguments.py): the string the rules read.
        try:
            proc = await asyncio.create_subprocess_shell(
                command,
                cwd=workspace.root,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # the kill below reaches the command's children too
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the command
            return {"error": str(exc)}
        try:
            out, err = await asyncio.wait_for(proc.communicate(), time_limit)
        except asyncio.TimeoutError:
            await _kill_group(proc)
            return {"error": f"command timed out after {time_limit:g} s", "exit_code": None}
        except asyncio.CancelledError:  # the run was cancelled or the console quit
            await _kill_group(proc)
            raise
        return {
            "exit_code": proc.returncode,
            "stdout": out.decode("utf-8", "replace")[:MAX_OUTPUT],
            "stderr": err.decode("utf-8", "replace")[:MAX_OUTPUT],
        }

    return [run_command]


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill the command and everything it started (its own process group: the shell's children
    hold its output pipes, and waiting for the shell alone would wait for them), then reap it,
    so no transport outlives the loop."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    await proc.wait()
