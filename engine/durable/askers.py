"""Runs of agents escalate did not write (engine/outside): their rows, and what is withdrawn when
the process that asked for them is gone.

Such a run is a session of Claude Code, Codex or an MCP client: no workflow of ours runs it, so
no console or worker may continue it (engine/durable/host.py `resume` leaves it alone). While one
of its hook processes waits, the row is `waiting`, owned and beaten by that process. A hook
killed with SIGKILL cannot withdraw its own request; whoever finds it gone does: the next hook
call, the MCP server, a console or worker looking for interrupted runs. A person never decides
a request whose asker is gone into nothing.
"""

from __future__ import annotations

import time
from typing import Any

from engine.durable.database import ACTIVE, HEARTBEAT_SECONDS, STALE_AFTER, Database
from engine.durable.owners import pid_gone

PATH_PREFIX = "agent:"  # the runs table's `path` of an outside agent's session: `agent:claude`


KEPT_KINDS = ("mcp",)  # agents whose requests outlive the process that asked: a client comes back for them


def is_outside(row: dict[str, Any]) -> bool:
    """The run is an outside agent's session (not a workflow of ours)."""
    return str(row.get("path") or "").startswith(PATH_PREFIX)


def is_kept(row: dict[str, Any]) -> bool:
    """The run's requests are kept when their asker is gone: an MCP client that disconnected
    asks again with the same `requestId` and gets the same escalation (or its decision), so
    they wait for a decision or their deadline like any escalation."""
    return str(row.get("path") or "") in {PATH_PREFIX + kind for kind in KEPT_KINDS}


def asker_gone(row: dict[str, Any], now: float | None = None) -> bool:
    """No process of this outside run is waiting any more: none has beaten for STALE_AFTER, or
    the last one to beat is a process of this host that no longer exists and nothing else has
    beaten since (several hooks of one session may wait at once: each beats)."""
    now = time.time() if now is None else now
    beat, owner = row.get("heartbeat"), row.get("owner")
    if beat is None or beat < now - STALE_AFTER:
        return True
    return bool(owner) and pid_gone(str(owner)) and beat < now - 2 * HEARTBEAT_SECONDS


def withdraw_if_gone(db: Database, row: dict[str, Any], now: float | None = None) -> list[str]:
    """Withdraw the pending escalations of this outside run when its askers are gone, and mark
    it aborted; returns the escalations withdrawn."""
    if not is_outside(row) or is_kept(row) or row.get("status") not in ACTIVE or not asker_gone(row, now):
        return []
    withdrawn = []
    for esc in db.pending_escalations([row["run_id"]]):
        db.withdraw(esc["id"])
        withdrawn.append(esc["id"])
    db.update_run(row["run_id"], status="aborted", finished=time.time(), heartbeat=None,
                  error="its agent's hook ended before a decision: what it asked was withdrawn")
    return withdrawn


def withdraw_gone(db: Database, now: float | None = None) -> list[str]:
    """`withdraw_if_gone` for every active outside run."""
    withdrawn: list[str] = []
    for row in db.list_runs():
        withdrawn += withdraw_if_gone(db, row, now)
    return withdrawn
