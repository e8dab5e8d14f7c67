"""What the person trusts, kept in their own configuration: `trust.json` in platformdirs' user
config folder (`~/.config/escalate/` on Linux), 0600: the databases whose runs they let escalate
continue (engine/durable/trust.py) and the digests of the workspace rules files whose `notify`
command they let run (as direnv does: any change to the file needs trusting again).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable

CONFIG_NAME = "trust.json"


class TrustError(Exception):
    """The configuration cannot be read or written: one line naming the file."""


# -- the user's configuration -----------------------------------------------------------------

def config_path() -> Path:
    from platformdirs import user_config_path

    return user_config_path("escalate") / CONFIG_NAME


def load() -> dict[str, Any]:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"databases": {}, "rules": {}}
    except (OSError, ValueError) as exc:
        raise TrustError(f"{path}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise TrustError(f"{path}: not a JSON object")
    databases, rules = data.get("databases"), data.get("rules")
    return {"databases": databases if isinstance(databases, dict) else {},
            "rules": rules if isinstance(rules, dict) else {}}


def update(change: Callable[[dict[str, Any]], None]) -> None:
    """Read, change and write the configuration under an exclusive lock (a lock file beside it):
    two processes trusting at once (two new databases marked together) both keep what they
    wrote, where a plain read-change-write lost one of them."""
    path = config_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path.with_name(f".{CONFIG_NAME}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise TrustError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file is closed, or the process ends
        data = load()
        change(data)
        _save(data)
    finally:
        os.close(fd)


def _save(data: dict[str, Any]) -> None:
    path = config_path()
    try:
        temp = path.with_name(f".{CONFIG_NAME}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(temp, path)
    except OSError as exc:
        raise TrustError(f"{path}: cannot write: {exc.strerror or exc}") from None


# -- workspace rules files ---------------------------------------------------------------------

def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def rules_trusted(path: Path, content: bytes) -> bool:
    try:
        known = load()["rules"].get(str(path.resolve()))
    except TrustError:
        return False
    return known == digest(content)


def trust_rules(path: Path) -> str:
    """`escalate rules trust FILE`: keep the digest of the file's content as it is now."""
    try:
        content = path.read_bytes()
    except OSError as exc:
        raise TrustError(f"{path}: cannot read: {exc.strerror or exc}") from None
    update(lambda data: data["rules"].__setitem__(str(path.resolve()), digest(content)))
    return digest(content)
