"""The escalation data model of seed 004: what an agent asks, and what comes back.

Shared by the runtime (which raises escalations), the broker (which owns pending ones), the
rules (which decide defaults) and the console (which shows them). Plain dataclasses: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# The kinds the rules need live apart, so that `escalate hook` (the rules alone) builds none of the
# dataclasses below (engine/kernel/kinds.py); they are this module's names all the same.
from engine.kernel.kinds import OnTimeout, Origin, Reason

__all__ = ["ASKED_BY", "Audit", "Decision", "Escalation", "EscalationRecord", "OnTimeout", "Option", "Origin",
           "PendingEscalation", "Reason", "ResolvedBy", "Response", "ResponseType", "TimeoutPolicy", "escalation_digest"]


class ResponseType(str, Enum):
    """`responseType` on the wire; what each one means is its row in engine/kernel/responses.py."""

    OPTION = "option"
    TEXT = "text"
    SKIP = "skip"
    AGENT_DECIDE = "agent_decide"


class ResolvedBy(str, Enum):
    HUMAN = "human"
    ANSWERS_FILE = "answers_file"
    RULE = "rule"
    TIMEOUT_DEFAULT = "timeout_default"


@dataclass(frozen=True)
class Option:
    id: str
    label: str
    description: str = ""
    recommended: bool = False


@dataclass(frozen=True)
class Escalation:
    """A request for a human decision (seed 004 `EscalationEvent`), plus where it came from."""

    id: str
    task_id: str
    run_id: str
    agent: str
    reason: Reason
    question: str
    context: str = ""
    options: tuple[Option, ...] = ()
    allow_agent_decision: bool = False
    timeout: float | None = None  # the escalation's own timeout field, seconds
    origin: Origin = Origin.AGENT_TEXT
    created_at: float = 0.0  # clock time when raised

    @property
    def recommended(self) -> Option | None:
        return next((o for o in self.options if o.recommended), None)

    def option(self, option_id: str) -> Option | None:
        return next((o for o in self.options if o.id == option_id), None)


@dataclass(frozen=True)
class Response:
    """What a human (or the answers file) says (seed 004 `EscalationResponse`)."""

    response_type: ResponseType
    selected_option: str | None = None
    text_response: str | None = None
    additional_instructions: str | None = None
    edited_args: dict[str, Any] | None = None  # a tool approval approved with other arguments


@dataclass(frozen=True)
class Audit:
    """Who decided, beyond `resolvedBy`, for the history: `rule` names the rule that decided
    (its pattern and FILE:LINE), `via` how the answer came (the console, a batch, `escalate
    answer`, an answers-file entry), `shown` what the decider was shown."""

    rule: str = ""
    via: str = ""
    shown: str = ""


@dataclass(frozen=True)
class Decision:
    """A resolved escalation: the response and who gave it."""

    escalation_id: str
    response: Response
    resolved_by: ResolvedBy
    resolved_at: float = 0.0
    note: str = ""  # e.g. "nobody answered within 300 s" or the rule that decided
    stops_task: bool = False  # a `stop` default or rule: the task ends (run exits 3)
    audit: Audit = field(default_factory=Audit)
    decided_by: str = ""  # who answered, for the other consoles: "alice@laptop via console"
    digest: str = ""  # escalation_digest of the request as the decider saw it ("": decided before digests)

    def to_event_fields(self, escalation: Escalation | None = None) -> dict[str, Any]:
        """The contract's `decision` event fields, plus the chosen option's label (from
        `escalation`) and `stopsTask` when the decision stops the task."""
        r = self.response
        fields = {
            "id": self.escalation_id,
            "responseType": r.response_type.value,
            "selectedOption": r.selected_option,
            "textResponse": r.text_response,
            "additionalInstructions": r.additional_instructions,
            "resolvedBy": self.resolved_by.value,
        }
        option = escalation.option(r.selected_option) if escalation is not None and r.selected_option else None
        if option is not None:
            fields["selectedLabel"] = option.label
        if self.stops_task:
            fields["stopsTask"] = True
        if r.edited_args is not None:
            fields["editedArgs"] = r.edited_args
        if self.audit.rule:
            fields["rule"] = self.audit.rule
        if self.audit.via:
            fields["via"] = self.audit.via
        return fields


@dataclass(frozen=True)
class TimeoutPolicy:
    """The resolved default for one escalation: when it expires and what then happens."""

    deadline: float | None  # absolute clock time; None = waits for a human
    on_timeout: OnTimeout = OnTimeout.WAIT
    option_id: str | None = None  # for OnTimeout.OPTION
    timeout_seconds: float | None = None

    def describe(self) -> str:
        """Human words for the pane's countdown line: what happens when time runs out."""
        if self.on_timeout is OnTimeout.OPTION:
            return f"option {self.option_id}"
        return self.on_timeout.value.replace("_", " ")


ASKED_BY = "askedBy"  # PendingEscalation.extra: why a person is asked (the rule, or the task override's switch)


@dataclass
class PendingEscalation:
    """One escalation as the broker holds it: the request and its timeout policy."""

    escalation: Escalation
    policy: TimeoutPolicy
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. tool name/args for approvals


def escalation_digest(pending: PendingEscalation) -> str:
    """A sha256 of what a decider is shown of an escalation (who asks, question, context, options,
    tool and arguments) as canonical JSON: a decision names the request it was made on, and the
    database applies it to that request only. Times and the timeout policy are left out: a run
    asking again after a restart asks the same question."""
    esc = pending.escalation
    shown = {
        "id": esc.id, "task": esc.task_id, "run": esc.run_id, "agent": esc.agent, "reason": esc.reason.value,
        "question": esc.question, "context": esc.context,
        "options": [[o.id, o.label, o.description, o.recommended] for o in esc.options],
        "allowAgentDecision": esc.allow_agent_decision, "origin": esc.origin.value,
        "tool": pending.extra.get("tool"), "args": pending.extra.get("args"),
    }
    text = json.dumps(shown, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass
class EscalationRecord:
    """One escalation as history shows it: asked, then decided or withdrawn. `earlier`: read
    from a store, asked in an earlier session."""

    pending: PendingEscalation
    decision: Decision | None = None
    withdrawn: bool = False
    earlier: bool = False

    @property
    def state(self) -> str:
        if self.decision is not None:
            return "decided"
        return "withdrawn" if self.withdrawn else "pending"
