"""`builtin streetrace.fs` / `streetrace.fs_readonly`: file tools confined to the workspace.

Async (file I/O in a thread) so a tool never freezes the event loop the console runs on.
Failures are returned as `{"error": ...}` so the agent sees them and can react. Arguments arrive
checked against the functions' signatures (tools/arguments.py): a path or a content is a string.

Links, the ways out of a confined folder that a path check cannot see:
- `write_file` never writes into an existing file: it writes a new file beside it and renames it
  over the old name. A hard link inside the workspace to a file outside (same inode, so no path
  check can tell) is thereby replaced by a file of its own; the outside file is never opened.
- `delete_file` removes the directory entry itself and never follows it: on a symlink it
  deletes the link, not what the link points to.
- Opens use O_NOFOLLOW (and reads O_NONBLOCK, so a FIFO cannot hang a read); races with other
  processes changing the workspace meanwhile are out of scope.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any, Callable

from engine.runtime.tools.workspace import PathRefused, Workspace

MAX_READ_BYTES = 1_000_000
# What a call may fail with, returned to the agent. ValueError: a string no file name or file can
# hold (a lone surrogate such as "\ud800" cannot be encoded).
_FAILURES = (PathRefused, OSError, ValueError)


class _NotAFile(Exception):
    """The path exists but is not a regular file (a directory, a FIFO, a device)."""


def fs_functions(workspace: Workspace, *, readonly: bool) -> list[Callable[..., Any]]:
    """The tool functions, bound to one workspace (names and docstrings become declarations)."""

    async def read_file(path: str) -> dict[str, Any]:
        """Read a text file of the workspace and return its content."""
        try:
            target = workspace.resolve(path)
            data = await asyncio.to_thread(_read_head, target, MAX_READ_BYTES + 1)
        except FileNotFoundError:
            return {"error": f"no such file: {path}"}
        except _NotAFile:
            return {"error": f"not a file: {path}"}
        except _FAILURES as exc:
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
        except _FAILURES as exc:
            return {"error": str(exc)}
        return {
            "path": workspace.relative(target),
            "entries": [p.name + ("/" if p.is_dir() else "") for p in entries],
        }

    async def write_file(path: str, content: str) -> dict[str, Any]:
        """Write a text file in the workspace (creating folders), replacing what was there."""
        text = content
        try:
            target = workspace.resolve(path)
            if target == workspace.root:
                return {"error": f"{path} is a directory"}
            await asyncio.to_thread(_replace, target, text.encode("utf-8"))
        except IsADirectoryError:
            return {"error": f"{path} is a directory"}
        except _NotAFile:
            return {"error": f"not a file: {path}"}
        except _FAILURES as exc:
            return {"error": str(exc)}
        return {"path": workspace.relative(target), "written": len(text)}

    async def delete_file(path: str) -> dict[str, Any]:
        """Delete a file of the workspace (a symlink: the link itself)."""
        try:
            entry = workspace.entry(path)
            await asyncio.to_thread(_unlink_entry, entry)
        except FileNotFoundError:
            return {"error": f"no such file: {path}"}
        except (IsADirectoryError, _NotAFile):
            return {"error": f"not a file: {path}"}
        except _FAILURES as exc:
            return {"error": str(exc)}
        return {"path": workspace.relative(entry), "deleted": True}

    if readonly:
        return [read_file, list_directory]
    return [read_file, write_file, delete_file, list_directory]


def _read_head(target: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file (a huge file is not read whole)."""
    fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _NotAFile(target)
        return f.read(limit)


def _replace(target: Path, data: bytes) -> None:
    """Write `data` to a new file beside `target`, then rename it over `target`: the old file
    (and whatever else shares its inode through a hard link) is never opened for writing. The
    new file keeps the old one's permission bits (not setuid/setgid/sticky)."""
    try:
        old = os.lstat(target)
    except FileNotFoundError:
        old = None
    if old is not None and stat.S_ISDIR(old.st_mode):
        raise IsADirectoryError(target)
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise _NotAFile(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{os.urandom(4).hex()}.escalate-tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if old is not None:
                os.fchmod(f.fileno(), old.st_mode & 0o777)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _unlink_entry(entry: Path) -> None:
    """Remove the directory entry itself: a symlink is removed, never followed."""
    if stat.S_ISDIR(os.lstat(entry).st_mode):
        raise IsADirectoryError(entry)
    os.unlink(entry)
