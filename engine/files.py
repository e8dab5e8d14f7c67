"""Reading a file the user named without trusting it: regular files only, bounded, never blocking.

A FIFO with no writer blocks a plain open() forever, /dev/zero never ends and a huge file would
be read whole into memory; all of them are one-line errors here instead.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_CHUNK = 1 << 20

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFile(Exception):
    """Why a file cannot be read: one human line without the path (the caller names the file)."""


def read_limited(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, refusing anything else and anything over `limit`."""
    try:
        # O_NONBLOCK: opening a FIFO that has no writer returns at once instead of waiting.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UnreadableFile("no such file") from None
    except OSError as exc:
        raise UnreadableFile(_reason(exc)) from None
    try:
        mode = os.fstat(fd).st_mode  # of what was opened: no race with a swapped path
        if stat.S_ISDIR(mode):
            raise UnreadableFile("it is a directory")
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "a special file")
            raise UnreadableFile(f"it is not a regular file ({kind})")
        chunks: list[bytes] = []
        left = limit + 1  # one byte more than allowed tells "too large" without reading it all
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise UnreadableFile(_reason(exc)) from None
    finally:
        os.close(fd)
    if left <= 0:
        raise UnreadableFile(f"it is larger than {_size(limit)}")
    return b"".join(chunks)


def _reason(exc: OSError) -> str:
    return (exc.strerror or str(exc)).lower()


def _size(limit: int) -> str:
    if limit % (1 << 20) == 0:
        return f"{limit >> 20} MiB"
    if limit % (1 << 10) == 0:
        return f"{limit >> 10} KiB"
    return f"{limit} bytes"
