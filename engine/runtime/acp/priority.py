"""ACP agents' processes (and the commands they run through escalate) at a lower CPU priority
than escalate when several run at once: a console showing 20 agents must draw a key's answer
before their next lines (docs/acp.md, Priority and Figures).

One agent runs as escalate. The k-th agent running at once in this process starts log_1.25(k)
nice levels lower (2: 3, 5: 7, 9 and more: 10), at most `ESCALATE_ACP_NICE` (0-19, default
`DEFAULT_NICE`; 0: always as escalate): each nice level is a weight 1.25 times smaller, so k
agents together weigh about as much as 1 + ln(k) programs (20: about 4), not k of them, and a
lone agent keeps its whole share of a machine busy with other work (a fixed +10 made one
agent's "answered -> told" median 7-15 ms against 0.4 ms on this host at load 15-20). A command
an agent runs through escalate starts at the level of the agents running then.

Set by escalate as soon as the process has started, before it is sent anything, for its whole
process group (what it starts later inherits it). Not in the child before exec: a `preexec_fn`
makes Python fork the whole console instead of vfork (139 ms against 12 ms for a 300 MB process
on this host, on the console's loop, per agent). Two knobs, since the child runs in a session of
its own (its process group is ended whole, and it has no controlling terminal to stop on): its
nice value, and on Linux with autogroups (`/proc/sys/kernel/sched_autogroup_enabled`) its session's
autogroup nice value, as there each session is scheduled as one group and a process's nice only
weighs against the others of its own session. The kernel takes an autogroup change from a user
without CAP_SYS_ADMIN once per 100 ms (EAGAIN meanwhile: 20 agents starting at once), so that
write is tried again for a while. Best effort: without either knob they run as escalate.
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
from pathlib import Path
from typing import Mapping

NICE_VARIABLE = "ESCALATE_ACP_NICE"
DEFAULT_NICE = 10  # the lowest an agent goes by default: the 9th agent running at once and beyond
LEVEL = 1.25  # the kernel's weight ratio between two nice values
MAX_NICE = 19
AUTOGROUP_RETRY = 0.11  # seconds: the kernel's limit on autogroup changes is one per 100 ms
AUTOGROUP_TRIES = 50  # ~5.5 s: 20 agents started at once by an unprivileged user all get theirs


class NiceError(ValueError):
    """$ESCALATE_ACP_NICE is not a whole number from 0 to 19 (one line)."""


def agent_niceness(environ: Mapping[str, str] = os.environ) -> int:
    """How much lower an agent's priority goes at most ($ESCALATE_ACP_NICE, else the default)."""
    given = environ.get(NICE_VARIABLE, "").strip()
    if not given:
        return DEFAULT_NICE
    try:
        value = int(given)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_NICE:
        raise NiceError(f"${NICE_VARIABLE}={given[:40]!r}: give a whole number from 0 (as escalate) to {MAX_NICE} (lowest)")
    return value


class Crowd:
    """The ACP agents running in this process: how much lower the next one starts."""

    def __init__(self) -> None:
        self.running = 0

    def join(self, cap: int) -> int:
        """An agent starts: its nice offset (its place among those running, at most `cap`)."""
        self.running += 1
        return self.offset(cap)

    def leave(self) -> None:
        self.running = max(0, self.running - 1)

    def offset(self, cap: int) -> int:
        """The offset of the agents running now (a command one of them runs starts at it)."""
        if self.running <= 1:
            return 0
        return min(cap, round(math.log(self.running) / math.log(LEVEL)))


CROWD = Crowd()


def lower_priority(pid: int, by: int) -> asyncio.Task[None] | None:
    """The process group `pid`, just started in a session of its own, `by` below escalate: its
    nice value and its session's autogroup, at once (before escalate says a word to it), or the
    autogroup, when the kernel says to wait, by a task that tries again (returned: cancel it when
    the process ends)."""
    if by <= 0:
        return None
    try:  # the whole group: whatever the command started in its first moments too
        os.setpriority(os.PRIO_PGRP, pid, min(MAX_NICE, os.getpriority(os.PRIO_PROCESS, 0) + by))
    except OSError:  # gone already, or not allowed: it runs as it is
        pass
    own = _autogroup_nice(Path("/proc/self/autogroup"))
    if own is None:  # no autogroups here
        return None
    value = min(MAX_NICE, own + by)
    if _set_autogroup(pid, value):
        return None
    return asyncio.ensure_future(_retry_autogroup(pid, value))


async def _retry_autogroup(pid: int, value: int) -> None:
    for _ in range(AUTOGROUP_TRIES):
        await asyncio.sleep(AUTOGROUP_RETRY)
        if _set_autogroup(pid, value):
            return


def _set_autogroup(pid: int, value: int) -> bool:
    """False while the kernel says to try later (EAGAIN); True once set, or when it cannot be."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(value))
    except OSError as exc:
        return exc.errno != errno.EAGAIN  # else gone, or not allowed: it runs as it is
    return True


def _autogroup_nice(path: Path) -> int | None:
    """The nice value of an autogroup ("/autogroup-42 nice 0"), None without autogroups."""
    try:
        words = path.read_text().split()
        return int(words[words.index("nice") + 1])
    except (OSError, ValueError, IndexError):
        return None
