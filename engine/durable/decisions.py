"""The broker's durable side: pending escalations and their decisions in the database.

The broker keeps owning the futures a process waits on; this store makes the database the truth
behind them (the broker's `Ledger`): an escalation is written when raised, a decision is applied
by a conditional update (the first writer wins: a console, `escalate answer`, an answers file or
a deadline). The feed (engine/durable/feed.py) reads here what other processes did, on news
(engine/durable/signals.py) and a slow poll: news names escalations only, the rows tell.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from engine.durable.database import Database
from engine.kernel.errors import RequestChanged
from engine.kernel.model import (
    Audit,
    Decision,
    Escalation,
    OnTimeout,
    Option,
    Origin,
    PendingEscalation,
    Reason,
    ResolvedBy,
    Response,
    ResponseType,
    TimeoutPolicy,
    escalation_digest,
)


def pending_to_json(pending: PendingEscalation) -> dict[str, Any]:
    esc, policy = pending.escalation, pending.policy
    return {
        "escalation": {
            "id": esc.id, "task_id": esc.task_id, "run_id": esc.run_id, "agent": esc.agent,
            "reason": esc.reason.value, "question": esc.question, "context": esc.context,
            "options": [{"id": o.id, "label": o.label, "description": o.description, "recommended": o.recommended}
                        for o in esc.options],
            "allow_agent_decision": esc.allow_agent_decision, "timeout": esc.timeout,
            "origin": esc.origin.value, "created_at": esc.created_at,
        },
        "policy": {"deadline": policy.deadline, "on_timeout": policy.on_timeout.value,
                   "option_id": policy.option_id, "timeout_seconds": policy.timeout_seconds},
        "extra": pending.extra,
    }


def pending_from_json(data: dict[str, Any]) -> PendingEscalation:
    e, p = data["escalation"], data["policy"]
    escalation = Escalation(
        id=e["id"], task_id=e["task_id"], run_id=e["run_id"], agent=e["agent"], reason=Reason.parse(e["reason"]),
        question=e["question"], context=e.get("context", ""),
        options=tuple(Option(o["id"], o["label"], o.get("description", ""), bool(o.get("recommended"))) for o in e["options"]),
        allow_agent_decision=bool(e.get("allow_agent_decision")), timeout=e.get("timeout"),
        origin=Origin(e.get("origin", Origin.AGENT_TEXT.value)), created_at=float(e.get("created_at") or 0.0),
    )
    policy = TimeoutPolicy(p["deadline"], OnTimeout(p["on_timeout"]), p.get("option_id"), p.get("timeout_seconds"))
    return PendingEscalation(escalation, policy, dict(data.get("extra") or {}))


def decision_to_json(decision: Decision) -> dict[str, Any]:
    r = decision.response
    return {
        "responseType": r.response_type.value, "selectedOption": r.selected_option, "textResponse": r.text_response,
        "additionalInstructions": r.additional_instructions, "resolvedBy": decision.resolved_by.value,
        "resolvedAt": decision.resolved_at, "note": decision.note, "stopsTask": decision.stops_task,
        "editedArgs": r.edited_args, "rule": decision.audit.rule, "via": decision.audit.via, "shown": decision.audit.shown,
        "decidedBy": decision.decided_by, "digest": decision.digest,
    }


def decision_from_json(esc_id: str, data: dict[str, Any]) -> Decision:
    edited = data.get("editedArgs")
    response = Response(ResponseType(data["responseType"]), data.get("selectedOption"), data.get("textResponse"),
                        data.get("additionalInstructions"), edited if isinstance(edited, dict) else None)
    audit = Audit(str(data.get("rule") or ""), str(data.get("via") or ""), str(data.get("shown") or ""))
    return Decision(esc_id, response, ResolvedBy(data["resolvedBy"]), float(data.get("resolvedAt") or 0.0),
                    data.get("note", ""), bool(data.get("stopsTask")), audit, str(data.get("decidedBy") or ""),
                    str(data.get("digest") or ""))


def who(via: str) -> str:
    """Who decides from this process, as the other consoles are told: `alice@laptop via console`."""
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:  # no user name in this environment (a container without passwd entry)
        user = f"uid {os.getuid()}" if hasattr(os, "getuid") else "someone"
    return f"{user}@{socket.gethostname()} via {via}"


class DecisionStore:
    """What the broker (its `Ledger`) and the feed ask of the database (short transactions)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def lookup(self, esc_id: str) -> tuple[str, Decision | None] | None:
        """The status of a known escalation and its decision, or None when unknown."""
        row = self.db.get_escalation(esc_id)
        if row is None:
            return None
        return row["status"], decision_from_json(esc_id, row["decision"]) if row["decision"] else None

    def raise_once(self, pending: PendingEscalation) -> float:
        """Record a raised escalation unless its id is recorded already; returns the raise time
        recorded for it."""
        esc = pending.escalation
        return self.db.add_escalation(esc.id, esc.run_id, pending_to_json(pending), esc.created_at, pending.policy.deadline,
                                      digest=escalation_digest(pending))

    def decide(self, decision: Decision) -> Decision | None:
        """Apply `decision` (its `digest`: the request as its decider saw it); returns the
        decision that holds (another one if someone was first), None when the escalation was
        withdrawn. Raises RequestChanged when the escalation waits as another request."""
        result = self.db.decide(decision.escalation_id, decision_to_json(decision), decision.resolved_by.value,
                                digest=decision.digest, now=decision.resolved_at or None)
        held = _held(decision, result)
        if isinstance(held, RequestChanged):
            raise held
        return held

    def decide_many(self, decisions: list[Decision]) -> list[Decision | RequestChanged | None]:
        """`decide` for many escalations in one transaction (a batch, a taught rule releasing
        what waits): for each, in order, the decision that holds, None (withdrawn), or
        RequestChanged (not the request its decider saw: left waiting)."""
        results = self.db.decide_many([(d.escalation_id, decision_to_json(d), d.resolved_by.value,
                                        d.resolved_at or None, d.digest) for d in decisions])
        return [_held(decision, result) for decision, result in zip(decisions, results)]

    def withdraw(self, esc_id: str) -> None:
        self.db.withdraw(esc_id)

    def listen(self, on_message: Any) -> Any:
        """News of escalations raised, decided or withdrawn by any process (a thread calls
        `on_message(text)`); returns `stop`."""
        return self.db.signals.listen(on_message)

    def pending_ids(self) -> set[str]:
        return self.db.pending_ids()

    def read(self, esc_ids: Iterable[str]) -> tuple[list[PendingEscalation], list[tuple[str, Decision | None]]]:
        """What the database holds for these escalations (news of them was heard), in one query:
        those pending, as raised, and those settled (id, decision or None if withdrawn)."""
        pending: list[PendingEscalation] = []
        settled: list[tuple[str, Decision | None]] = []
        for row in self.db.escalations_among(esc_ids):
            if row["status"] == "pending":
                pending.append(pending_from_json(row["payload"]))
            else:
                settled.append((row["id"], decision_from_json(row["id"], row["decision"]) if row["decision"] else None))
        return pending, settled

    def still_pending(self, esc_ids: Iterable[str] | None) -> list[PendingEscalation]:
        """Those of these escalations (None: all) that are pending now, as raised."""
        rows = self.db.pending_escalations() if esc_ids is None else self.db.pending_among(esc_ids)
        return [pending_from_json(row["payload"]) for row in rows]

    def settled(self, esc_ids: Iterable[str]) -> list[tuple[str, Decision | None]]:
        """Escalations among these that are no longer pending: (id, decision or None if withdrawn)."""
        return [(row["id"], decision_from_json(row["id"], row["decision"]) if row["decision"] else None)
                for row in self.db.decided(esc_ids)]


def _held(decision: Decision, result: Any) -> Decision | RequestChanged | None:
    """What holds after trying `decision` (result: the database's DecideResult)."""
    if result.won:
        return decision
    if result.status == "changed":
        return RequestChanged(f"escalation {decision.escalation_id} changed since it was shown: look at it again")
    return decision_from_json(decision.escalation_id, result.decision) if result.decision else None
