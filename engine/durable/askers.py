"""Runs of agents escalate did not write (engine/outside): their rows, and what is withdrawn when
the process that asked for them is gone.

Such a run is a session of Claude Code, Codex or an MCP client: no workflow of ours runs it, so
no console or worker may continue it (engine/durable/host.py `resume` leaves it alone). While one
of its hook processes waits, the row is `waiting`, owned and beaten by that process. A hook (or
an `escalate mcp` server) killed with SIGKILL cannot withdraw its own request; whoever finds it
gone does: the next hook call, the MCP server, a console or worker looking for interrupted runs.
A person never decides a request whose asker is gone into nothing. Only an MCP request with a
`requestId` outlives its asker: its client comes back for it.
"""

from __future__ import annotations

import time
from typing import Any

from engine.durable.database import ACTIVE, HEARTBEAT_SECONDS, STALE_AFTER, Database
from engine.durable.owners import pid_gone

PATH_PREFIX = "agent:"  # the runs table's `path` of an outside agent's session: `agent:claude`


KEPT_KINDS = ("mcp",)  # agents whose requests outlive the process that asked: a client comes back for them
# `<kind>-once-...`: a request of a kept kind that nobody can come back for (an MCP call without a
# `requestId`): it lives only in the process that asked, and is withdrawn when that process is gone.
ONCE = "once"


def is_outside(row: dict[str, Any]) -> bool:
    """The run is an outside agent's session (not a workflow of ours)."""
    return str(row.get("path") or "").startswith(PATH_PREFIX)


def is_kept(row: dict[str, Any]) -> bool:
    """The run's requests may be kept when their asker is gone: an MCP client that disconnected
    asks again with the same `requestId` and gets the same escalation (or its decision), so
    they wait for a decision or their deadline like any escalation."""
    return str(row.get("path") or "") in {PATH_PREFIX + kind for kind in KEPT_KINDS}


def is_kept_request(row: dict[str, Any], esc_id: str) -> bool:
    """This escalation of outside run `row` waits for its client to come back for it."""
    kind = str(row.get("path") or "")[len(PATH_PREFIX):]
    return is_kept(row) and not esc_id.startswith(f"{kind}-{ONCE}-")


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
    """Withdraw the pending escalations of this outside run when its askers are gone (but those
    a client comes back for), and mark it aborted unless such a one still waits; returns the
    escalations withdrawn."""
    if not is_outside(row) or row.get("status") not in ACTIVE:
        return []
    # Its askers are judged on the row as it is now: a process of the session may have begun to
    # wait since `row` was read (a listing of every run).
    fresh = db.get_run(row["run_id"])
    if fresh is None or fresh.get("status") not in ACTIVE or not asker_gone(fresh, now):
        return []
    waiting = [e["id"] for e in db.pending_escalations([row["run_id"]])]
    pending = [esc_id for esc_id in waiting if not is_kept_request(row, esc_id)]
    if is_kept(row) and not pending:
        return []  # only what its client comes back for waits: the run stays as it is
    for esc_id in pending:
        db.withdraw(esc_id)
    if len(pending) < len(waiting):  # what its client comes back for still waits
        return pending
    asker = "MCP server" if is_kept(row) else "agent's hook"
    db.update_run(row["run_id"], status="aborted", finished=time.time(), heartbeat=None,
                  error=f"its {asker} ended before a decision: what it asked was withdrawn")
    return pending


def withdraw_gone(db: Database, now: float | None = None) -> list[str]:
    """`withdraw_if_gone` for every active outside run."""
    withdrawn: list[str] = []
    for row in db.list_runs():
        withdrawn += withdraw_if_gone(db, row, now)
    return withdrawn
