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

import json
import os
import stat
from pathlib import Path

CACHE_NAME = "rules-checked.json"
VERSION = 1
KEEP = 64  # digests remembered: a project's taught rules file changes one rule at a time
MAX_BYTES = 16 * 1024

_schema_source: bytes | None = None


def digest(text: str) -> str:
    """The key of `text` checked by this escalate's schema."""
    import hashlib  # when rules files are read, never on a hook's snapshot hit (OpenSSL's load: ~2 ms)

    global _schema_source
    if _schema_source is None:
        from importlib import resources

        _schema_source = resources.files("rules").joinpath("schema.py").read_bytes()
    return hashlib.sha256(_schema_source + b"\x00" + text.encode("utf-8", "surrogatepass")).hexdigest()


def was_checked(folder: Path, key: str) -> bool:
    """True when `folder`'s cache, believed, holds `key`."""
    return key in _keys(read_private_json(folder / CACHE_NAME, MAX_BYTES))


def remember(folder: Path, key: str) -> None:
    """Add `key` to `folder`'s cache; a failure only costs the next process the schema check."""
    keys = [k for k in _keys(read_private_json(folder / CACHE_NAME, MAX_BYTES)) if k != key][-(KEEP - 1):]
    write_private_json(folder, CACHE_NAME, {"version": VERSION, "checked": keys + [key]})


def _keys(data: object) -> list[str]:
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("checked"), list):
        return []
    keys = data["checked"]
    if len(keys) > KEEP or not all(isinstance(k, str) and len(k) == 64 and _hex(k) for k in keys):
        return []
    return keys


def _hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


# -- a JSON file of this user's alone (this cache, rules/snapshot.py's) ----------------------------


def read_private_json(path: Path, max_bytes: int) -> object:
    """`path`'s JSON when it is a regular file of this user's with no access for others, at
    most `max_bytes`; else None (never an error: a cache not believed is a cache missed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077
                or info.st_size > max_bytes):
            return None
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return json.loads(b"".join(chunks).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)


def write_private_json(folder: Path, name: str, data: object) -> None:
    """`folder/name` replaced whole by `data` as JSON, 0600, when `folder` is this user's folder
    (not a link); nothing on failure."""
    try:
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            return
        temp = folder / f".{name}.{os.getpid()}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, ensure_ascii=False)
            os.replace(temp, folder / name)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    except (OSError, ValueError):
        pass
