"""Batch decisions: the pending requests like the one on screen (the same tool for a tool
approval, the same reason otherwise), and the answer "approve" or "deny" gives each. Every one
is still its own decision (engine/escalation/broker.py `apply_many`)."""

from __future__ import annotations

from engine.escalation.broker import APPROVE, DENY
from engine.escalation.model import Origin, PendingEscalation, Response, ResponseType


def kind_of(pending: PendingEscalation) -> str:
    """What makes requests alike: `tool NAME` for approvals, else `reason NAME`."""
    esc = pending.escalation
    if esc.origin is Origin.TOOL_APPROVAL:
        return f"tool {pending.extra.get('tool', '?')}"
    return f"reason {esc.reason.value}"


def alike(pending: list[PendingEscalation], current: PendingEscalation) -> list[PendingEscalation]:
    kind = kind_of(current)
    return [p for p in pending if kind_of(p) == kind]


def batch_response(pending: PendingEscalation, approve: bool) -> Response | None:
    """Approve: a tool call runs; an escalation takes its recommended option, else the agent
    decides when it may. Deny: a tool call is refused; an escalation is skipped. None when
    approving means nothing for this one (no recommended option, no agent decision)."""
    esc = pending.escalation
    if esc.origin is Origin.TOOL_APPROVAL:
        return Response(ResponseType.OPTION, selected_option=APPROVE if approve else DENY)
    if not approve:
        return Response(ResponseType.SKIP)
    if esc.recommended is not None:
        return Response(ResponseType.OPTION, selected_option=esc.recommended.id)
    if esc.allow_agent_decision:
        return Response(ResponseType.AGENT_DECIDE)
    return None
