"""The kinds of seed 004's escalation model that the rules need (engine/kernel/model.py names them
too): plain enums, apart from the model's dataclasses, whose creation (each one's methods compiled
at import) a hook call decided by the rules does not pay for (docs/outside.md, "Speed").
"""

from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    ARCHITECTURE_DECISION = "architecture_decision"
    BREAKING_CHANGE = "breaking_change"
    UNCLEAR_REQUIREMENT = "unclear_requirement"
    TEST_FAILURE = "test_failure"
    SECURITY_CONCERN = "security_concern"
    COST_WARNING = "cost_warning"
    FILE_CONFLICT = "file_conflict"
    DEPENDENCY_ISSUE = "dependency_issue"
    OTHER = "other"

    @classmethod
    def parse(cls, value: object) -> "Reason":
        """An unknown reason becomes `other` (contract: never an error)."""
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            return cls.OTHER


class Origin(str, Enum):
    """How the escalation was raised: an agent's JSON reply, its ask tool, a gated tool call,
    a flow's `escalate to human` statement, or a run's token budget."""

    AGENT_TEXT = "agent_text"
    AGENT_TOOL = "agent_tool"
    TOOL_APPROVAL = "tool_approval"
    FLOW = "flow"
    BUDGET = "budget"  # the runtime's own cost_warning: a run's token budget almost used up


class OnTimeout(str, Enum):
    """What a deadline does, per reason (contract `onTimeout`); `option:ID` is `OPTION` + id."""

    CONTINUE = "continue"
    STOP = "stop"
    WAIT = "wait"
    AGENT_DECIDE = "agent_decide"
    RECOMMENDED = "recommended"
    OPTION = "option"
