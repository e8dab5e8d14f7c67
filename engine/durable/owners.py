"""Owner ids: which process holds a run (its row's `owner`), as `host-pid-random`, so that any
process of the same host can tell at once that the owner no longer exists."""

from __future__ import annotations

import os
import socket
import uuid


def new_owner() -> str:
    """An owner id for this process (unique: the random part tells apart a reused pid)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def pid_gone(owner: str) -> bool:
    """True when `owner` names a process of this host that no longer exists."""
    host, _, pid = owner.rpartition("-")[0].rpartition("-")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
