"""`builtin streetrace.fs` / `streetrace.fs_readonly`: file tools confined to the workspace.

Async (file I/O in a thread) so a tool never freezes the event loop the console runs on.
Failures are returned as `{"error": ...}` so the agent sees them and can react.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from engine.runtime.tools.workspace import PathRefused, Workspace

MAX_READ_BYTES = 1_000_000


def fs_functions(workspace: Workspace, *, readonly: bool) -> list[Callable[..., Any]]:
    """The tool functions, bound to one workspace (names and docstrings become declarations)."""

    async def read_file(path: str) -> dict[str, Any]:
        """Read a text file of the workspace and return its content."""
        try:
            target = workspace.resolve(path)
            if not target.is_file():
                return {"error": f"no such file: {path}"}
            data = await asyncio.to_thread(target.read_bytes)
        except (PathRefused, OSError) as exc:
            return {"error": str(exc)}
        text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
        return {"path": workspace.relative(target), "content": text, "truncated": len(data) > MAX_READ_BYTES}

    async def list_directory(path: str) -> dict[str, Any]:
        """List the entries of a workspace directory ('.' is the workspace itself)."""
        try:
            target = workspace.resolve(path)
            if not target.is_dir():
                return {"error": f"no such directory: {path}"}
            entries = await asyncio.to_thread(lambda: sorted(target.iterdir()))
        except (PathRefused, OSError) as exc:
            return {"error": str(exc)}
        return {
            "path": workspace.relative(target),
            "entries": [p.name + ("/" if p.is_dir() else "") for p in entries],
        }

    async def write_file(path: str, content: str) -> dict[str, Any]:
        """Write a text file in the workspace (creating folders), replacing what was there."""
        try:
            target = workspace.resolve(path)
            if target == workspace.root or target.is_dir():
                return {"error": f"{path} is a directory"}

            def write() -> None:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(str(content), encoding="utf-8")

            await asyncio.to_thread(write)
        except (PathRefused, OSError) as exc:
            return {"error": str(exc)}
        return {"path": workspace.relative(target), "written": len(str(content))}

    async def delete_file(path: str) -> dict[str, Any]:
        """Delete a file of the workspace."""
        try:
            target = workspace.resolve(path)
            if not target.is_file():
                return {"error": f"no such file: {path}"}
            await asyncio.to_thread(target.unlink)
        except (PathRefused, OSError) as exc:
            return {"error": str(exc)}
        return {"path": workspace.relative(target), "deleted": True}

    if readonly:
        return [read_file, list_directory]
    return [read_file, write_file, delete_file, list_directory]
