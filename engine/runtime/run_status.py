"""Where a run stands. Its own module so that the engine (which starts runs and reports them)
and the runner (which ends them) both name the same states without importing each other."""

from __future__ import annotations

from enum import Enum


class RunStatus(str, Enum):
    RUNNING = "running"
    WAITING = "waiting"  # on a human
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"
    ABORTED = "aborted"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self not in (RunStatus.RUNNING, RunStatus.WAITING)
