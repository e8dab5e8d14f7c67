"""Batch decisions: the pending requests like the one on screen, each shown whole, and the
answer "approve" or "deny" gives each. Every one is still its own decision
(engine/escalation/broker.py `apply_many`).

Alike means the same task and, for a tool approval, the same tool with the same shape of
arguments (the same keys, each value of the same JSON type); for any other escalation, the
same reason. A request whose whole text is longer than MAX_REQUEST_TEXT is never in a batch:
a list of many cannot show it whole, so it is answered on its own, in the pane.
"""

from __future__ import annotations

import json
from typing import Any

from engine.kernel.model import Origin, PendingEscalation, Response
from engine.kernel import responses

MAX_REQUEST_TEXT = 400  # characters: about four lines of the batch list, each row read in full

_JSON_TYPES = ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"), (list, "array"),
               (dict, "object"), (type(None), "null"))  # bool first: a bool is an int to Python


def _json_type(value: Any) -> str:
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def shape(args: Any) -> tuple[tuple[str, str], ...]:
    """The keys of a tool call's arguments and the JSON type of each value, sorted."""
    if not isinstance(args, dict):
        return (("", _json_type(args)),)
    return tuple(sorted((str(key), _json_type(value)) for key, value in args.items()))


def kind_of(pending: PendingEscalation) -> str:
    """What the batch is of, for its title and the audit's `via`: `tool NAME` or `reason NAME`."""
    esc = pending.escalation
    if esc.origin is Origin.TOOL_APPROVAL:
        return f"tool {pending.extra.get('tool', '?')}"
    return f"reason {esc.reason.value}"


def likeness(pending: PendingEscalation) -> tuple[Any, ...]:
    """What alike ones share (the broker's tally of it answers whether `b` applies)."""
    esc = pending.escalation
    if esc.origin is Origin.TOOL_APPROVAL:
        return (esc.task_id, kind_of(pending), shape(pending.extra.get("args")))
    return (esc.task_id, kind_of(pending))


def request_text(pending: PendingEscalation) -> str:
    """The whole request, as a batch shows it: a tool call with its exact arguments (JSON, keys
    sorted: newlines and control characters escaped, nothing padded away), else the question."""
    esc = pending.escalation
    if esc.origin is Origin.TOOL_APPROVAL:
        args = json.dumps(pending.extra.get("args"), ensure_ascii=False, sort_keys=True, default=str)
        return f"{pending.extra.get('tool', '?')}({args})"
    return esc.question


def shown_whole(pending: PendingEscalation) -> bool:
    return len(request_text(pending)) <= MAX_REQUEST_TEXT


def alike(pending: list[PendingEscalation], current: PendingEscalation) -> list[PendingEscalation]:
    """The requests like `current` (itself included), whether or not each can be shown whole."""
    key = likeness(current)
    return [p for p in pending if likeness(p) == key]


def batch_response(pending: PendingEscalation, approve: bool) -> Response | None:
    """Approve: a tool call runs; an escalation takes its recommended option, else the agent
    decides when it may. Deny: a tool call is refused; an escalation is skipped. None when
    approving means nothing for this one (no recommended option, no agent decision)."""
    esc = pending.escalation
    if esc.origin is Origin.TOOL_APPROVAL:
        return responses.kind("approve" if approve else "deny").make()
    if not approve:
        return responses.kind("skip").make()
    if esc.recommended is not None:
        return responses.kind("option").make(esc.recommended.id)
    if esc.allow_agent_decision:
        return responses.kind("agent_decide").make()
    return None
