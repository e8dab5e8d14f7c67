"""Owner ids: which process holds a run (its row's `owner`), as `host-pid-random`, so that any
process of the same host can tell at once that the owner no longer exists."""

from __future__ import annotations

import os
import socket
import uuid


def new_owner() -> str:
    """An owner id for this process (unique: the random part tells apart a reused pid)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def alive_here(owner: str, beat: float) -> bool:
    """True when `owner` names a process of this host that exists and already existed at its
    last heartbeat `beat` (a pid reused by a process started since is not it). A late beat
    (a stopped process, or one starved on a loaded host) does not make it gone: its runs are
    still executing there."""
    pid = _local_pid(owner)
    if pid is None or not _exists(pid):
        return False
    started = _started(pid)
    return started is None or started <= beat + 2.0  # /proc's boot time is in whole seconds


def _local_pid(owner: str) -> int | None:
    """The pid `owner` names when it is a process of this host."""
    host, _, pid = owner.rpartition("-")[0].rpartition("-")
    return int(pid) if host == socket.gethostname() and pid.isdigit() else None


def _exists(pid: int) -> bool:
    """The process runs (a zombie, killed and not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[:1] != ["Z"]  # field 3: state
    except OSError:
        return True  # no /proc here: kill(0) is all we know


def _started(pid: int) -> float | None:
    """When process `pid` started (epoch seconds), where /proc tells (Linux); else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            ticks = int(stat.read().rpartition(")")[2].split()[19])  # field 22: starttime
        with open("/proc/stat", encoding="ascii", errors="replace") as system:
            boot = next(int(line.split()[1]) for line in system if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def pid_gone(owner: str) -> bool:
    """True when `owner` names a process of this host that no longer exists."""
    pid = _local_pid(owner)
    return pid is not None and not _exists(pid)
