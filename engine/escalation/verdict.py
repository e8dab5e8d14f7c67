"""The rules' verdict on a tool call, apart from the desk: `escalate hook` decides by the rules
at every tool call of an agent session, and this needs neither the broker nor asyncio
(docs/outside.md). The desk (engine/escalation/desk.py) gives its verdicts through it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from engine.kernel.frozen import Frozen
from rules.model import Action, Rule, Rules


class Gate(StrEnum):
    """What the rules say of a tool call (a str: the console shows and compares the value)."""

    ALLOW = "allow"  # it runs
    DENY = "deny"  # refused by a rule
    STOP = "stop"  # a rule stops the task
    ASK = "ask"  # a person confirms it first


class ToolVerdict(Frozen):
    """The rules' verdict on one tool call, computed once (`EscalationDesk.tool_verdict`) and
    carried through the confirmation pause to `settle_tool`, never computed again."""

    gate: Gate
    rule: Rule | None = None  # the rule that decided; None: no rule matched

    @property
    def by(self) -> str:
        return rule_name(self.rule)


def tool_verdict(rules: Rules, task: str, tool: str, args: dict[str, Any]) -> ToolVerdict:
    """What the rules say about a tool call, with the rule that decided (nothing counted)."""
    rule = rules.match_tool(task, tool, args)
    return ToolVerdict(gate_of(rules, task, rule), rule)


def gate_of(rules: Rules, task: str, rule: Rule | None) -> Gate:
    """The gate for a call the rules matched to `rule` (None: no rule) in `task`."""
    if rule is not None and rule.action is Action.DENY:
        return Gate.DENY
    if rule is not None and rule.action is Action.STOP:
        return Gate.STOP
    override = rules.override(task)
    if rule is not None and rule.taught and rule.action is Action.ALLOW:
        # A person allowed exactly this call: no confirmation is asked again, unless the
        # task says every escalation waits for a human (alwaysAsk).
        return Gate.ASK if override is not None and override.always_ask else Gate.ALLOW
    if (rule is not None and rule.action is Action.ASK_USER) or (override and override.require_confirmation):
        return Gate.ASK
    return Gate.ALLOW


def denial(tool: str, by: str) -> str:
    """What the agent is told of a denied tool call, whoever denied it (a rule, a person, the
    answers file, the timeout default): one wording, so that a script's `when: "denied"` and an
    agent's reading of it never depend on who it was. `by` names who, after "denied by"."""
    return f"The tool call {tool} was denied by {by}. Do not retry it."


def rule_name(rule: Rule | None) -> str:
    return rule.describe() if rule else "the rules"
