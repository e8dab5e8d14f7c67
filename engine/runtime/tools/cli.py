"""`builtin streetrace.cli`: run a shell command in the workspace with a time limit."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from engine.runtime.tools.workspace import Workspace

MAX_OUTPUT = 64_000


def cli_functions(workspace: Workspace, *, time_limit: float = 60.0) -> list[Callable[..., Any]]:
    async def run_command(command: str) -> dict[str, Any]:
        """Run a shell command in the workspace folder and return its exit code and output."""
        try:
            proc = await asyncio.create_subprocess_shell(
                str(command),
                cwd=workspace.root,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # the kill below reaches the command's children too
            )
        except OSError as exc:
            return {"error": str(exc)}
        try:
            out, err = await asyncio.wait_for(proc.communicate(), time_limit)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            return {"error": f"command timed out after {time_limit:g} s", "exit_code": None}
        except asyncio.CancelledError:
            proc.kill()
            await proc.wait()  # reap it, so no transport outlives the loop
            raise
        return {
            "exit_code": proc.returncode,
            "stdout": out.decode("utf-8", "replace")[:MAX_OUTPUT],
            "stderr": err.decode("utf-8", "replace")[:MAX_OUTPUT],
        }

    return [run_command]
