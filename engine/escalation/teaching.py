"""Teaching a rule from a decision: propose the narrowest rule for a waiting request, save it,
load the rules again, and settle at once the requests already waiting that it now decides.

A taught `allow` never overrides a written deny or stop, nor a task's `alwaysAsk` (rules.model
and the desk apply that on every match); for an agent escalation, allow means the agent decides
on its own and deny means skip, as for any rule (docs/escalation.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable

from engine.escalation.desk import rule_key
from engine.kernel.model import Decision, Origin, PendingEscalation
from rules.matcher import Activity, BadPattern, Pattern
from rules.model import Action, Rule, Rules
from rules.book import RuleBook
from rules.teach import TeachError, add_rule, escalation_pattern, remove_rule, tool_pattern

if TYPE_CHECKING:
    from engine.escalation.desk import EscalationDesk

__all__ = ["Proposal", "TeachError", "forget", "propose", "teach"]


@dataclass(frozen=True)
class Proposal:
    """A rule about to be saved; `pattern` may be edited before saving."""

    pending: PendingEscalation
    action: Action  # ALLOW or DENY
    pattern: str

    @property
    def task(self) -> str:
        return self.pending.escalation.task_id

    def activity(self) -> Activity:
        esc = self.pending.escalation
        if esc.origin is Origin.TOOL_APPROVAL:
            return Activity.of_tool(str(self.pending.extra.get("tool")), dict(self.pending.extra.get("args") or {}))
        return Activity.of_escalation(esc)


def propose(pending: PendingEscalation, action: Action) -> Proposal:
    """The narrowest rule for this request: its task, and exactly its tool call (this tool with
    these arguments) or exactly its escalation's text. Raises TeachError when none can be made."""
    esc = pending.escalation
    if action not in (Action.ALLOW, Action.DENY):
        raise TeachError(f"a taught rule allows or denies, not {action.value}")
    if esc.origin is Origin.TOOL_APPROVAL:
        tool, args = pending.extra.get("tool"), pending.extra.get("args")
        if not isinstance(tool, str) or not isinstance(args, dict):
            raise TeachError(f"escalation {esc.id} was raised before approvals carried their call: answer it instead")
        return Proposal(pending, action, tool_pattern(tool, args))
    return Proposal(pending, action, escalation_pattern(esc))


def check(proposal: Proposal, rules: Rules) -> None:
    """Refuse a rule that could not do what it says: a bad pattern, one that no longer matches
    the request it was taught from, or an allow in a task whose escalations always wait."""
    try:
        pattern = Pattern(proposal.pattern)
    except BadPattern as exc:
        raise TeachError(f"bad regular expression: {exc.message}") from None
    if not proposal.pattern.strip():
        raise TeachError("the pattern is empty")
    if not pattern.matches(proposal.activity()):
        raise TeachError("the pattern does not match this request any more")
    override = rules.override(proposal.task)
    if proposal.action is Action.ALLOW and override is not None and override.always_ask:
        raise TeachError(f"task {proposal.task!r} has alwaysAsk: an allow rule never applies there (deny can)")


def teach(desk: "EscalationDesk", book: RuleBook, proposal: Proposal,
          on_rules: Callable[[Rules], None] | None = None) -> tuple[Rule, list[Decision]]:
    """Save the rule into the book's target file, load the rules again, and settle the waiting
    requests it decides (each its own decision, resolvedBy rule, naming it)."""
    check(proposal, desk.rules)
    stamp = datetime.fromtimestamp(time.time(), timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    taught = f"{stamp} from escalation {proposal.pending.escalation.id}"
    saved = add_rule(book.target, proposal.task, proposal.pattern, proposal.action, taught)
    _reload(desk, book, on_rules)
    key = rule_key(saved)
    return saved, desk.release_waiting(lambda rule: rule_key(rule) == key)


def forget(desk: "EscalationDesk", book: RuleBook, rule: Rule, on_rules: Callable[[Rules], None] | None = None) -> None:
    """Remove a rule of the book's target file and load the rules again."""
    if not book.writable(rule):
        raise TeachError(f"{rule.where} is not in {book.target}: edit that file to change it")
    remove_rule(book.target, rule)
    _reload(desk, book, on_rules)


def _reload(desk: "EscalationDesk", book: RuleBook, on_rules: Callable[[Rules], None] | None) -> None:
    from rules.loader import RulesError, RulesUnreadable

    try:
        rules = book.load()
    except (RulesError, RulesUnreadable) as exc:
        raise TeachError(str(exc).splitlines()[0]) from None
    desk.set_rules(rules)
    if on_rules is not None:
        on_rules(rules)
