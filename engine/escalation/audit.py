"""The audit of decisions: one record per escalation (who decided, which rule, how, when, after
how long, what was shown, and edited arguments), the same for `escalate runs --format json` and
the history's export, and the figures per reason and per agent (approval rate, median time to
decide). Plain data: no I/O, no Textual."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from statistics import median
from typing import Any, Callable, Iterable

from engine.kernel.model import EscalationRecord, Origin
from engine.kernel.responses import kind_of


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def audit_record(record: EscalationRecord) -> dict[str, Any]:
    """One escalation and its decision, as exported (JSON-ready)."""
    esc = record.pending.escalation
    out: dict[str, Any] = {
        "id": esc.id, "runId": esc.run_id, "task": esc.task_id, "agent": esc.agent, "reason": esc.reason.value,
        "origin": esc.origin.value, "question": esc.question, "askedAt": iso(esc.created_at), "state": record.state,
    }
    if esc.origin is Origin.TOOL_APPROVAL and "tool" in record.pending.extra:
        out["tool"] = record.pending.extra.get("tool")
        out["args"] = record.pending.extra.get("args")
    decision = record.decision
    if decision is None:
        return out
    r = decision.response
    out.update({
        "responseType": r.response_type.value, "selectedOption": r.selected_option, "textResponse": r.text_response,
        "additionalInstructions": r.additional_instructions, "editedArgs": r.edited_args,
        "resolvedBy": decision.resolved_by.value, "rule": decision.audit.rule or None, "via": decision.audit.via or None,
        "shown": decision.audit.shown or None, "note": decision.note or None,
        "decidedAt": iso(decision.resolved_at), "waitedSeconds": round(max(0.0, decision.resolved_at - esc.created_at), 3),
        "approved": approved(record), "stopsTask": decision.stops_task,
        "digest": decision.digest or None,  # the request as its decider saw it (engine/kernel/model.py)
    })
    return out


def json_lines(records: Iterable[EscalationRecord]) -> str:
    return "".join(json.dumps(audit_record(r), ensure_ascii=False, default=str) + "\n" for r in records)


def approved(record: EscalationRecord) -> bool | None:
    """Did the decision let the work go on (approve, an option, text, the agent decides) rather
    than deny, skip or stop it? None while undecided."""
    decision = record.decision
    if decision is None:
        return None
    esc = record.pending.escalation
    return not decision.stops_task and kind_of(decision.response, esc.origin).approves(esc)


@dataclass(frozen=True)
class Figures:
    name: str
    decided: int
    approved: int
    median_seconds: float | None

    @property
    def rate(self) -> float:
        return self.approved / self.decided if self.decided else 0.0


def figures_by(records: Iterable[EscalationRecord], key: Callable[[EscalationRecord], str]) -> list[Figures]:
    """Approval rate and median time to decide, per `key` (reason, agent), most decided first."""
    groups: dict[str, list[EscalationRecord]] = {}
    for record in records:
        if record.decision is not None:
            groups.setdefault(key(record), []).append(record)
    result = []
    for name, group in groups.items():
        waits = [r.decision.resolved_at - r.pending.escalation.created_at for r in group if r.decision is not None]
        result.append(Figures(name, len(group), sum(1 for r in group if approved(r)), median(waits) if waits else None))
    return sorted(result, key=lambda f: (-f.decided, f.name))


def by_reason(record: EscalationRecord) -> str:
    return record.pending.escalation.reason.value


def by_agent(record: EscalationRecord) -> str:
    return record.pending.escalation.agent or "-"
