"""Reading files the user names (workflows, imports, rules, scripts, answers) without hanging.

`Path.read_bytes()` blocks for ever on a FIFO with no writer and never ends on `/dev/zero`; a
huge file fills memory. `read_limited` opens without blocking, refuses anything that is not a
regular file, and reads at most `limit + 1` bytes, so neither can happen.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

MIB = 1024 * 1024


class UnreadableFile(Exception):
    """Why a file cannot be read: one line for a human, without the file's name (the caller,
    which knows how the user named the file, puts it in front)."""


def read_limited(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit` of them; raises UnreadableFile."""
    check_regular(path)  # before opening: a device is never opened
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableFile(_os_reason(exc)) from None
    try:
        info = os.fstat(fd)
        _refuse_special(info)  # what was opened, whatever the path pointed to when checked
        if info.st_size > limit:
            raise UnreadableFile(_too_large(limit))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # st_size may lie (/proc files, a file growing as we read)
            chunk = os.read(fd, min(limit + 1 - size, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise UnreadableFile(_os_reason(exc)) from None
    finally:
        os.close(fd)
    if size > limit:
        raise UnreadableFile(_too_large(limit))
    return b"".join(chunks)


def replace_text(path: Path, text: str) -> None:
    """`path` replaced whole by `text` (UTF-8): written beside it and renamed over it, so a reader
    never sees half a file; an existing file's permissions are kept. Raises OSError, leaving no
    temporary file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def check_regular(path: Path) -> None:
    """Raise UnreadableFile unless `path` is (a symbolic link to) a regular file."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise UnreadableFile(_os_reason(exc)) from None
    except ValueError:  # a NUL character in the name
        raise UnreadableFile("not a usable file name") from None
    _refuse_special(info)


def _refuse_special(info: os.stat_result) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    if stat.S_ISDIR(info.st_mode):
        raise UnreadableFile("it is a directory")
    raise UnreadableFile(f"not a regular file (it is a {_kind(info.st_mode)})")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _too_large(limit: int) -> str:
    size = f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit} bytes"
    return f"larger than {size}, the limit"


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "it is a directory"
    return exc.strerror or str(exc)
