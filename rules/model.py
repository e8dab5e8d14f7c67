"""The validated rules: which activities go to a human, and what silence means.

Built only by rules.loader (so every instance is valid). Pure data plus lookups; no I/O.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from engine.kernel.frozen import Frozen, factory
from engine.kernel.kinds import OnTimeout, Origin, Reason
from rules.matcher import Activity, Pattern, normalize
from rules.shell import SHELL_TOOL, ParsedCommand, parse_command

if TYPE_CHECKING:  # the hook matches tool calls only: the model's dataclasses are not built for it
    from engine.kernel.model import Escalation, TimeoutPolicy

DEFAULT_TIMEOUT = 300.0  # seed 004: "Default if no response in 5min"
# Upper bounds for what the files say; beyond them a value is a typo or an attack (a deadline
# of 1e300 s). "No deadline" is `onTimeout: wait`, not a huge number.
MAX_SECONDS = 365 * 24 * 3600.0  # timeouts and policy.loopWindow: one year
MAX_AGENT_DEPTH = 100  # policy.maxDepth
MAX_NOTIFY_SECONDS = 60.0  # notify.timeout: a notify command that takes longer is killed
DENY_OPTION = "deny"  # tool approvals fail closed


class Action(str, Enum):
    ASK_USER = "ask_user"
    ALLOW = "allow"
    DENY = "deny"
    STOP = "stop"


class Rule(Frozen):
    pattern: Pattern
    action: Action
    timeout: float | None = None  # optional: deadline for what this rule sends to a human
    line: int = 0
    column: int = 0
    why: str = ""  # set on the stand-in rule for a shell command rules cannot check
    file: str = ""  # the rules file it was read from (a workspace file is layered over another)
    taught: str = ""  # set on a rule saved from a decision (rules.teach): when, and from which

    @property
    def where(self) -> str:
        """`FILE:LINE`, where the rule is written."""
        return f"{self.file}:{self.line}" if self.file else f"line {self.line}"

    def describe(self) -> str:
        if self.why:
            return self.why
        kind = "taught rule" if self.taught else "rule"
        return f"{kind} {self.pattern.source!r} ({self.action.value}, {self.where})"


ALWAYS_ASK, REQUIRE_CONFIRMATION = "alwaysAsk", "requireConfirmation"  # a task override's switches


class TaskOverride(Frozen):
    always_ask: bool = False
    require_confirmation: bool = False
    rules: tuple[Rule, ...] = ()
    name: str = ""  # the task as the file writes it
    switched_at: tuple[tuple[str, str], ...] = ()  # (switch, FILE:LINE) of each switch set to true

    def switch(self, switch: str) -> str:
        """`taskOverrides.deploy: requireConfirmation (rules.yaml:7)`: a switch and where it is set."""
        where = dict(self.switched_at).get(switch, "")
        return f"taskOverrides.{self.name}: {switch}" + (f" ({where})" if where else "")


def switch_key(task: str, switch: str) -> tuple[str, str, str]:
    """A task override's switch, counted beside the rules (desk.hits) when it makes a person be asked."""
    return ("taskOverrides", task, switch)


class AskedBy(Frozen):
    """Why a person is asked: in words (the rule with its FILE:LINE, or the override's
    switches), and the switches that did it (counted as their matches)."""

    text: str  # "" when no rule and no switch is involved: the agent asked by itself
    switches: tuple[tuple[str, str], ...] = ()  # (task as written, switch)


class ReasonDefault(Frozen):
    on_timeout: OnTimeout
    timeout: float = DEFAULT_TIMEOUT
    option_id: str | None = None  # for `option:ID`

    def describe(self) -> str:
        return f"option:{self.option_id}" if self.on_timeout is OnTimeout.OPTION else self.on_timeout.value


MAX_BUDGET_TOKENS = 10**12  # budgets.*.tokens: a trillion tokens is a typo, not a budget
DEFAULT_WARN_AT = 0.8  # seed 004's "budget almost exhausted": at 80 %
DEFAULT_BUDGET = "default"  # the `budgets:` entry every task without its own entry gets


class Budget(Frozen):
    """A run's token budget (seed 004's cost_warning): warn at `warn_at`, stop at `tokens`."""

    tokens: int
    warn_at: float = DEFAULT_WARN_AT
    source: str = "budgets.default"  # where the rules say so, for messages


class PolicyConfig(Frozen):
    """Seed 002's agent-to-agent policy as configured (engine.escalation.agent_policy uses it)."""

    paths: dict[str, tuple[str, ...]] = factory(dict)
    fallbacks: dict[str, tuple[str, ...]] = factory(dict)
    max_depth: int = 3
    loop_window: float = 300.0
    target_hints: dict[str, str] = factory(dict)  # keyword -> target, in order


class NotifyCommand(Frozen):
    """`notify: {command: [...]}`: run for each escalation that waits for a human, with the
    escalation as JSON on stdin (engine/escalation/notify/command.py)."""

    command: tuple[str, ...]
    timeout: float = 10.0


class Rules(Frozen):
    global_rules: tuple[Rule, ...] = ()
    task_overrides: dict[str, TaskOverride] = factory(dict)
    defaults: dict[Reason, ReasonDefault] = factory(dict)
    policy: PolicyConfig = factory(PolicyConfig)
    notify: NotifyCommand | None = None
    source: str = "<rules>"
    budgets: dict[str, Budget] = factory(dict)  # task name (or "default") -> budget

    def override(self, task: str) -> TaskOverride | None:
        """A task's override: exact name first, then with case, `_` and `-` ignored."""
        found = self.task_overrides.get(task)
        if found is not None:
            return found
        wanted = normalize(task)
        return next((o for name, o in self.task_overrides.items() if normalize(name) == wanted), None)

    def budget(self, task: str) -> Budget | None:
        """A task's token budget: its own entry (matched like taskOverrides), else the default."""
        found = self.budgets.get(task)
        if found is None:
            wanted = normalize(task)
            found = next((b for name, b in self.budgets.items() if name != DEFAULT_BUDGET and normalize(name) == wanted), None)
        return found if found is not None else self.budgets.get(DEFAULT_BUDGET)

    def match(self, task: str, activity: Activity, *, taught: bool = False) -> Rule | None:
        """First match wins: the task override's rules, then the global rules. Taught rules
        (saved from a decision) are matched apart from the written ones (`taught=True`)."""
        override = self.override(task)
        for rule in (override.rules if override else ()) + self.global_rules:
            if bool(rule.taught) == taught and rule.pattern.matches(activity):
                return rule
        return None

    def all_rules(self) -> list[tuple[str, Rule]]:
        """Every rule with its scope (`global` or `task NAME`), in the order they are checked."""
        scoped = [(f"task {task}", rule) for task, o in self.task_overrides.items() for rule in o.rules]
        return scoped + [("global", rule) for rule in self.global_rules]

    def match_escalation(self, escalation: Escalation) -> Rule | None:
        activity = Activity.of_escalation(escalation)
        return _with_taught(self.match(escalation.task_id, activity),
                            self.match(escalation.task_id, activity, taught=True))

    def match_tool(self, task: str, tool: str, args: dict[str, Any]) -> Rule | None:
        """The rule that decides a tool call. For `run_command`, every simple command of the
        shell command is matched on its own (first match wins within each, as the text of the
        whole call is too) and the strictest outcome decides: stop, deny, ask_user, allow. A
        command whose words rules cannot know (rules.shell) asks a human unless a rule denies
        or stops it: then a stand-in ask_user rule saying why is returned."""
        activity = Activity.of_tool(tool, args)
        # A taught rule is matched against the whole call only, never one simple command of it:
        # a taught allow of `rm -rf build` says nothing about `rm -rf build; rm -rf /`.
        return _with_taught(self._match_written_tool(task, tool, args, activity),
                            self.match(task, activity, taught=True))

    def _match_written_tool(self, task: str, tool: str, args: dict[str, Any], activity: Activity) -> Rule | None:
        if tool != SHELL_TOOL:
            return self.match(task, activity)
        command = args.get("command")
        # A run checks arguments before the rules (engine/runtime/tools/arguments.py); a command
        # that is not a string anyway is text no shell analysis read: a human decides.
        parsed = parse_command(command) if isinstance(command, str) else ParsedCommand((), "the command is not a string")
        found = [self.match(task, activity)]
        found += [self.match(task, Activity.of_simple_command(tool, words)) for words in parsed.commands]
        strictest = max(found, key=_severity)
        if parsed.unresolved and _severity(strictest) < _SEVERITY[Action.ASK_USER]:
            return Rule(_UNCHECKED, Action.ASK_USER, why=f"{parsed.unresolved}: a human decides")
        return strictest

    def asked_by(self, task: str, rule: Rule | None, *, tool: bool) -> AskedBy:
        """Why a person is asked about an escalation (`tool`: a tool call) of `task` that the
        rules matched to `rule`: that rule when it says ask_user, else the override's switch
        that turned the rules' answer into asking (`alwaysAsk` also takes the deadline away)."""
        override = self.override(task)
        used: list[str] = []
        if rule is not None and rule.action is Action.ASK_USER:
            text = rule.describe()
        elif rule is not None and rule.action is Action.ALLOW and override is not None and override.always_ask:
            text, used = f"{rule.describe()}, asked anyway by {override.switch(ALWAYS_ASK)}", [ALWAYS_ASK]
        elif tool and override is not None and override.require_confirmation:
            text, used = override.switch(REQUIRE_CONFIRMATION), [REQUIRE_CONFIRMATION]
        else:
            text = ""  # no rule: the agent asked by itself
        if override is not None and override.always_ask and ALWAYS_ASK not in used:
            used.append(ALWAYS_ASK)  # no deadline: it waits for you
            text = "; ".join(filter(None, [text, f"no timeout: {override.switch(ALWAYS_ASK)}"]))
        name = override.name if override is not None else task
        return AskedBy(text, tuple((name, switch) for switch in used))

    def switches(self) -> list[tuple[TaskOverride, str]]:
        """Every task override switch set to true, with its override, in the file's order."""
        return [(o, switch) for o in self.task_overrides.values()
                for switch, on in ((ALWAYS_ASK, o.always_ask), (REQUIRE_CONFIRMATION, o.require_confirmation)) if on]

    def timeout_policy(self, escalation: Escalation, now: float, rule: Rule | None = None) -> TimeoutPolicy:
        """When this escalation expires and what then happens.

        No deadline for `alwaysAsk` tasks, `wait` reasons and reasons without a default entry:
        they wait for a human. Otherwise the escalation's own timeout beats the matching rule's,
        which beats the reason's; at the deadline `allowAgentDecision` means agent_decide, else
        the reason's onTimeout. Tool approvals expire as `deny` (fail closed).
        """
        from engine.kernel.model import TimeoutPolicy

        override = self.override(escalation.task_id)
        if override is not None and override.always_ask:
            return TimeoutPolicy(None)
        default = self.defaults.get(escalation.reason)
        if default is not None and default.on_timeout is OnTimeout.WAIT:
            default = None  # a `wait` reason has no deadline, like a reason without an entry
        rule_timeout = rule.timeout if rule else None
        if escalation.origin is Origin.TOOL_APPROVAL:
            seconds = _first(rule_timeout, default.timeout if default else None)
            if seconds is None:
                return TimeoutPolicy(None)
            return TimeoutPolicy(now + seconds, OnTimeout.OPTION, DENY_OPTION, seconds)
        if default is None:
            return TimeoutPolicy(None)
        seconds = _first(escalation.timeout, rule_timeout, default.timeout) or 0.0
        if escalation.allow_agent_decision:
            return TimeoutPolicy(now + seconds, OnTimeout.AGENT_DECIDE, None, seconds)
        return TimeoutPolicy(now + seconds, default.on_timeout, default.option_id, seconds)

    def summary(self) -> str:
        """One line for `escalate rules check`."""
        n_rules = len(self.global_rules) + sum(len(o.rules) for o in self.task_overrides.values())
        return ", ".join([
            _count(len(self.global_rules), "global rule"),
            _count(len(self.task_overrides), "task override") + f" ({_count(n_rules, 'rule')} in all)",
            _count(len(self.defaults), "reason default"),
            _count(len(self.policy.paths), "agent escalation source"),
        ])


_UNCHECKED = Pattern(SHELL_TOOL)  # the stand-in rule's pattern (never matched: not in any list)
_SEVERITY = {Action.ALLOW: 1, Action.ASK_USER: 2, Action.DENY: 3, Action.STOP: 4}


def _with_taught(written: Rule | None, taught: Rule | None) -> Rule | None:
    """A taught rule decides unless the written rules are stricter where it matters: a taught
    allow never overrides a written deny or stop (nor `alwaysAsk`, which the desk applies); a
    taught deny gives way only to a stop."""
    if taught is None:
        return written
    if written is not None and written.action in (Action.DENY, Action.STOP) and _severity(written) >= _severity(taught):
        return written
    return taught


def _severity(rule: Rule | None) -> int:
    return _SEVERITY[rule.action] if rule is not None else 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)
