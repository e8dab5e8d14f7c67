"""Which rules texts already passed the schema check, remembered in the project's `.escalate/`.

Checking a rules file against rules/schema.py's pydantic models costs its import and the
models' build (~120 ms here), and `escalate hook` loads the project's rules at every tool call
of every agent session. The loader's position-exact checks always run; only that schema check
is skipped for a text this user's escalate checked before. The file holds JSON only (nothing in
it is executed): `{"version": 1, "checked": ["<sha256 hex>", ...]}`, each digest over the
schema's own source and the rules text, so that another escalate version's schema checks again.

It is believed only when it is this user's alone (a regular file, not a link, owned by this
user, mode 0600: git never checks out such a file) and of the right shape; anything else is
ignored (the schema check runs) and replaced when it can be.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from importlib import resources
from pathlib import Path

CACHE_NAME = "rules-checked.json"
VERSION = 1
KEEP = 64  # digests remembered: a project's taught rules file changes one rule at a time
MAX_BYTES = 16 * 1024

_schema_source: bytes | None = None


def digest(text: str) -> str:
    """The key of `text` checked by this escalate's schema."""
    global _schema_source
    if _schema_source is None:
        _schema_source = resources.files("rules").joinpath("schema.py").read_bytes()
    return hashlib.sha256(_schema_source + b"\x00" + text.encode("utf-8", "surrogatepass")).hexdigest()


def was_checked(folder: Path, key: str) -> bool:
    """True when `folder`'s cache, believed, holds `key`."""
    return key in _read(folder / CACHE_NAME)


def remember(folder: Path, key: str) -> None:
    """Add `key` to `folder`'s cache (0600, replaced whole), when `folder` is this user's
    folder; a failure only costs the next process the schema check again."""
    try:
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            return
        keys = [k for k in _read(folder / CACHE_NAME) if k != key][-(KEEP - 1):] + [key]
        temp = folder / f".{CACHE_NAME}.{os.getpid()}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="ascii") as out:
                json.dump({"version": VERSION, "checked": keys}, out)
            os.replace(temp, folder / CACHE_NAME)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    except OSError:
        pass


def _read(path: Path) -> list[str]:
    """The digests of a cache this user wrote, else none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return []
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077
                or info.st_size > MAX_BYTES):
            return []
        data = json.loads(os.read(fd, MAX_BYTES + 1).decode("ascii"))
    except (OSError, ValueError, RecursionError):
        return []
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("checked"), list):
        return []
    keys = data["checked"]
    if len(keys) > KEEP or not all(isinstance(k, str) and len(k) == 64 and _hex(k) for k in keys):
        return []
    return keys


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)
