"""ACP agents' processes (and the commands they run through escalate) at a lower CPU priority
than escalate: a console showing 20 agents must draw a key's answer before their next lines, and
a batch agent loses little by waiting a few milliseconds for a core (docs/acp.md, Figures).

`ESCALATE_ACP_NICE` (0-19, default `DEFAULT_NICE`) is how much lower: 0 leaves them as escalate.
Set in the child before it runs the command (`preexec_fn`: system calls only), so the command
and everything it starts inherit it. Two knobs, since the child runs in a session of its own
(its process group is ended whole, and it has no controlling terminal to stop on): its nice
value, and on Linux with autogroups (`/proc/sys/kernel/sched_autogroup_enabled`) its session's
autogroup nice value, as there each session is scheduled as one group and a process's nice only
weighs against the others of its own session. The kernel takes an autogroup change from a user
without CAP_SYS_ADMIN once per 100 ms (EAGAIN meanwhile: 20 agents starting at once), so escalate
writes again what the child could not. Best effort: without either knob they run as escalate.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import os
from pathlib import Path
from typing import Callable, Mapping

NICE_VARIABLE = "ESCALATE_ACP_NICE"
# bench_acp.py --console --agents 20 (docs/acp.md, Figures): 10 gives an agent's session a tenth
# of the console's weight when both want a core.
DEFAULT_NICE = 10
MAX_NICE = 19
AUTOGROUP_RETRY = 0.11  # seconds: the kernel's limit on autogroup changes is one per 100 ms
AUTOGROUP_TRIES = 50  # ~5.5 s: 20 agents started at once by an unprivileged user all get theirs


class NiceError(ValueError):
    """$ESCALATE_ACP_NICE is not a whole number from 0 to 19 (one line)."""


def agent_niceness(environ: Mapping[str, str] = os.environ) -> int:
    """How much lower the agents' priority is than escalate's ($ESCALATE_ACP_NICE, else the default)."""
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


class Lowered:
    """A child process `by` below escalate: `child` is the `preexec_fn` of its start (with
    `start_new_session`), `settle(pid)` after the start writes the autogroup the kernel made the
    child wait for."""

    def __init__(self, by: int) -> None:
        own = _autogroup_nice(Path("/proc/self/autogroup"))
        self.autogroup = None if own is None else min(MAX_NICE, own + by)
        self.child: Callable[[], None] | None = functools.partial(_lower_self, by, self.autogroup) if by > 0 else None

    def settle(self, pid: int) -> asyncio.Task[None] | None:
        """The autogroup of the started child `pid`, when it is not set yet: a task that tries
        again (returned: cancel it when the process ends)."""
        if self.child is None or self.autogroup is None:
            return None
        now = _autogroup_nice(Path(f"/proc/{pid}/autogroup"))
        if now is None or now == self.autogroup or _set_autogroup(pid, self.autogroup):  # gone, set by the child, set now
            return None
        return asyncio.ensure_future(_retry_autogroup(pid, self.autogroup))


def _lower_self(by: int, autogroup: int | None) -> None:
    """In the child, between fork and exec (after setsid): system calls only, no error raised."""
    try:
        os.nice(by)
    except OSError:
        pass
    if autogroup is not None:
        try:
            fd = os.open("/proc/self/autogroup", os.O_WRONLY)
            try:
                os.write(fd, str(autogroup).encode())
            finally:
                os.close(fd)
        except OSError:  # EAGAIN: the parent writes it (Lowered.settle)
            pass


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
