"""Load a rules YAML file into a validated `Rules`, or reject it whole with FILE:LINE:COL.

A section the file leaves out (`global`, `taskOverrides`, `defaults`, `budgets`, `policy`) keeps
the shipped default for that section; a section that is present (even empty) replaces it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from yaml.nodes import Node

from engine.kernel.frozen import replace
from engine.kernel.model import OnTimeout, Reason
from rules.matcher import REGEX_PREFIX, BadPattern, Pattern
from rules.model import (
    ALWAYS_ASK, DEFAULT_BUDGET, DEFAULT_TIMEOUT, DEFAULT_WARN_AT, MAX_AGENT_DEPTH, MAX_BUDGET_TOKENS, MAX_NOTIFY_SECONDS,
    MAX_SECONDS, REQUIRE_CONFIRMATION, Action, Budget, NotifyCommand, PolicyConfig, ReasonDefault, Rule, Rules, TaskOverride,
)
from rules import snapshot
from rules.layering import layered
from rules.workspace import workspace_rules_path
from rules.yamlnodes import Reader, YamlError, YamlUnreadable, did_you_mean, read_text

RulesError = YamlError  # invalid file: `FILE:LINE:COL: message`
RulesUnreadable = YamlUnreadable  # missing or unreadable file

DEFAULT_RULES_NAME = "default.yaml"

# Kept equal to rules/schema.py's models by tests/rules/test_schema.py.
_TOP = ("escalationRules", "policy", "notify")
_SECTIONS = ("global", "taskOverrides", "defaults", "budgets")
_BUDGET = ("tokens", "warnAt")
_NOTIFY = ("command", "timeout")
_RULE = ("pattern", "action", "timeout", "taught")
_OVERRIDE = ("alwaysAsk", "requireConfirmation", "rules")
_DEFAULT = ("timeout", "onTimeout")
_POLICY = ("paths", "fallbacks", "maxDepth", "loopWindow", "targetHints")
_ON_TIMEOUT = "continue, stop, wait, agent_decide, recommended or option:ID"
_RE2_SYNTAX = "rule regexes use RE2 syntax: no backreferences or lookaround"

_shipped: Rules | None = None


def load_rules(path: Path | str | None = None, *, checked_in: Path | None = None) -> Rules:
    """The rules of `path` over the shipped defaults; None gives the shipped defaults.
    `checked_in`: the folder remembering which texts passed the schema (parse_rules)."""
    if path is None:
        return default_rules()
    return parse_rules(read_text(str(path)), str(path), base=default_rules(), checked_in=checked_in)


def load_layered(explicit: Path | str | None, base: Path | str | None = None, workspace: Path | None = None) -> Rules:
    """The rules a command runs with: `--rules` when given (taught rules are saved there too);
    else `base` (the shipped rules, or the demo's) with the workspace's taught-rules file
    (`.escalate/rules.yaml`) layered over it when that file exists. The workspace's
    `.escalate/` remembers which texts passed the schema (rules/checked.py) and, over the
    shipped rules, what the files gave (rules/snapshot.py: no YAML read while they are unchanged;
    kept in the user's cache folder when the workspace has no `.escalate/`)."""
    top = workspace_rules_path(workspace)
    where = None
    if base is None:
        where = snapshot.slot(Path(explicit) if explicit is not None else None, top)  # before reading them
        parts = snapshot.recall(where)
        if parts is not None:  # the very files it was made from: the text is the one parsed then
            return layered(parts, top, None)
    text = None
    if explicit is not None:
        parts = [load_rules(explicit, checked_in=top.parent)]
    else:
        parts = [load_rules(base, checked_in=top.parent)]
        if top.is_file():
            text = read_text(str(top))
            parts.append(parse_rules(text, str(top), base=Rules(), checked_in=top.parent))
    snapshot.keep(where, parts)
    return layered(parts, top, text)


def default_rules() -> Rules:
    global _shipped
    if _shipped is None:
        text = resources.files("rules").joinpath(DEFAULT_RULES_NAME).read_text(encoding="utf-8")
        # Not validated against rules/schema.py's models here: tests/rules/test_schema.py checks
        # the shipped file against them, and building those pydantic models costs ~90 ms of every
        # start (`run`, a hook: docs/startup.md). The position-exact checks still run.
        _shipped = _RulesParser(Reader(text, f"rules/{DEFAULT_RULES_NAME}")).parse(Rules())
    return _shipped


def parse_rules(text: str, file: str, base: Rules | None = None, *, checked_in: Path | None = None) -> Rules:
    """Validate `text`; raises RulesError on the first problem (nothing half-applies).
    `checked_in`: a folder (the project's `.escalate/`) remembering the texts that passed the
    schema check, which is then skipped for them (rules/checked.py); the checks here always run."""
    reader = Reader(text, file)
    rules = _RulesParser(reader).parse(base if base is not None else default_rules())
    if checked_in is None:
        _check_schema(reader)
        return rules
    from rules import checked

    key = checked.digest(text)
    if not checked.was_checked(checked_in, key):
        _check_schema(reader)
        checked.remember(checked_in, key)
    return rules


def _check_schema(reader: Reader) -> None:
    """What the checks of _RulesParser do not cover: rules/schema.py's models (pydantic)."""
    from rules.schema import RulesFile, validate_document

    validate_document(RulesFile, reader, what="the rules file")


class _RulesParser:
    def __init__(self, reader: Reader) -> None:
        self.r = reader

    def parse(self, base: Rules) -> Rules:
        r = self.r
        result = replace(base, source=r.file)
        if r.root is None or r.is_null(r.root):
            return result
        top = r.mapping(r.root, "the rules file", _TOP)
        if "escalationRules" in top:
            node = top["escalationRules"][1]
            sections = {} if r.is_null(node) else r.mapping(node, "escalationRules", _SECTIONS)
            if "global" in sections:
                result = replace(result, global_rules=self.rule_list(sections["global"][1], "global"))
            if "taskOverrides" in sections:
                result = replace(result, task_overrides=self.overrides(sections["taskOverrides"][1]))
            if "defaults" in sections:
                result = replace(result, defaults=self.defaults(sections["defaults"][1]))
            if "budgets" in sections:
                result = replace(result, budgets=self.budgets(sections["budgets"][1]))
        if "policy" in top:
            result = replace(result, policy=self.policy(top["policy"][1]))
        if "notify" in top:
            result = replace(result, notify=self.notify(top["notify"][1]))
        return result

    def notify(self, node: Node) -> NotifyCommand | None:
        r = self.r
        if r.is_null(node):
            return None
        entries = r.mapping(node, "notify", _NOTIFY)
        command_node = r.require(entries, "command", node, "notify")
        words = tuple(r.string(item, "notify.command entry") for item in r.sequence(command_node, "notify.command"))
        if not words:
            raise r.error(command_node, "notify.command must name a program, e.g. [notify-send, escalate]")
        timeout = r.number(entries["timeout"][1], "notify.timeout", maximum=MAX_NOTIFY_SECONDS) if "timeout" in entries else 10.0
        if timeout <= 0:
            raise r.error(entries["timeout"][1], "notify.timeout must be more than 0")
        return NotifyCommand(words, timeout)

    # -- escalationRules -----------------------------------------------------------------------

    def rule_list(self, node: Node, where: str) -> tuple[Rule, ...]:
        if self.r.is_null(node):
            return ()
        return tuple(self.rule(item, f"{where} rule {n}") for n, item in enumerate(self.r.sequence(node, where), 1))

    def rule(self, node: Node, what: str) -> Rule:
        r = self.r
        entries = r.mapping(node, what, _RULE)
        pattern_node = r.require(entries, "pattern", node, what)
        source = r.string(pattern_node, f"{what}: pattern")
        try:
            pattern = Pattern(source)
        except BadPattern as exc:
            col = pattern_node.start_mark.column + 1
            if exc.pos is not None and _verbatim(pattern_node):  # point at the offending character
                col += len(REGEX_PREFIX) + exc.pos + (1 if pattern_node.style else 0)
            message = f"{what}: bad regular expression: {exc.message} ({_RE2_SYNTAX})"
            raise RulesError(r.file, pattern_node.start_mark.line + 1, col, message) from None
        if source.startswith(REGEX_PREFIX) and not source[len(REGEX_PREFIX) :]:
            raise r.error(pattern_node, f"{what}: empty regular expression after 're:'")
        action_node = r.require(entries, "action", node, what)
        action_text = r.string(action_node, f"{what}: action")
        try:
            action = Action(action_text)
        except ValueError:
            raise r.error(
                action_node, f"{what}: unknown action {action_text!r}{did_you_mean(action_text, [a.value for a in Action])}"
            ) from None
        timeout = r.number(entries["timeout"][1], f"{what}: timeout", maximum=MAX_SECONDS) if "timeout" in entries else None
        taught = r.string(entries["taught"][1], f"{what}: taught") if "taught" in entries else ""
        return Rule(pattern, action, timeout, node.start_mark.line + 1, node.start_mark.column + 1,
                    file=r.file, taught=taught)

    def overrides(self, node: Node) -> dict[str, TaskOverride]:
        r = self.r
        if r.is_null(node):
            return {}
        result: dict[str, TaskOverride] = {}
        for task, (_, value) in r.mapping(node, "taskOverrides").items():
            what = f"taskOverrides.{task}"
            entries = {} if r.is_null(value) else r.mapping(value, what, _OVERRIDE)
            switches = {switch: r.boolean(entries[switch][1], f"{what}.{switch}") if switch in entries else False
                        for switch in (ALWAYS_ASK, REQUIRE_CONFIRMATION)}
            result[task] = TaskOverride(
                always_ask=switches[ALWAYS_ASK],
                require_confirmation=switches[REQUIRE_CONFIRMATION],
                rules=self.rule_list(entries["rules"][1], f"{what}.rules") if "rules" in entries else (),
                name=task,
                switched_at=tuple((switch, f"{r.file}:{entries[switch][0].start_mark.line + 1}")
                                  for switch, on in switches.items() if on),
            )
        return result

    def defaults(self, node: Node) -> dict[Reason, ReasonDefault]:
        r = self.r
        if r.is_null(node):
            return {}
        result: dict[Reason, ReasonDefault] = {}
        reasons = [reason.value for reason in Reason]
        for name, (key_node, value) in r.mapping(node, "defaults").items():
            if name not in reasons:
                raise r.error(key_node, f"defaults: unknown reason {name!r}{did_you_mean(name, reasons)}")
            what = f"defaults.{name}"
            entries = r.mapping(value, what, _DEFAULT)
            on_node = r.require(entries, "onTimeout", value, what)
            on_timeout, option_id = self.on_timeout(on_node, f"{what}.onTimeout")
            timeout = r.number(entries["timeout"][1], f"{what}.timeout", maximum=MAX_SECONDS) if "timeout" in entries else DEFAULT_TIMEOUT
            result[Reason(name)] = ReasonDefault(on_timeout, timeout, option_id)
        return result

    def on_timeout(self, node: Node, what: str) -> tuple[OnTimeout, str | None]:
        text = self.r.string(node, what)
        if text.startswith("option:"):
            option_id = text[len("option:") :].strip()
            if not option_id:
                raise self.r.error(node, f"{what}: 'option:' needs an option id, e.g. option:opt1")
            return OnTimeout.OPTION, option_id
        kinds = [k.value for k in OnTimeout if k is not OnTimeout.OPTION]
        if text not in kinds:
            raise self.r.error(node, f"{what}: unknown onTimeout {text!r}; expected {_ON_TIMEOUT}{_hint(text, kinds)}")
        return OnTimeout(text), None

    def budgets(self, node: Node) -> dict[str, Budget]:
        """`default:` first; a task's entry takes what it leaves out from it."""
        r = self.r
        if r.is_null(node):
            return {}
        entries = r.mapping(node, "budgets")
        result: dict[str, Budget] = {}
        base: Budget | None = None
        for name in sorted(entries, key=lambda n: n != DEFAULT_BUDGET):
            key_node, value = entries[name]
            what = f"budgets.{name}"
            fields = r.mapping(value, what, _BUDGET)
            if "tokens" in fields:
                tokens = int(r.number(fields["tokens"][1], f"{what}.tokens", minimum=1, maximum=MAX_BUDGET_TOKENS, integer=True))
            elif base is not None:
                tokens = base.tokens
            else:
                raise r.error(value, f"{what}: missing required key 'tokens' (there is no budgets.default to take it from)")
            warn_at = base.warn_at if base is not None else DEFAULT_WARN_AT
            if "warnAt" in fields:
                warn_at = r.number(fields["warnAt"][1], f"{what}.warnAt", maximum=1.0)
                if warn_at <= 0:
                    raise r.error(fields["warnAt"][1], f"{what}.warnAt must be above 0 (0.8 warns at 80 %)")
            result[name] = Budget(tokens, warn_at, what)
            if name == DEFAULT_BUDGET:
                base = result[name]
        return result

    # -- policy (seed 002) ---------------------------------------------------------------------

    def policy(self, node: Node) -> PolicyConfig:
        r = self.r
        if r.is_null(node):
            return PolicyConfig()
        entries = r.mapping(node, "policy", _POLICY)
        config = PolicyConfig()
        if "paths" in entries:
            config = replace(config, paths=self.agent_lists(entries["paths"][1], "policy.paths"))
        if "fallbacks" in entries:
            config = replace(config, fallbacks=self.agent_lists(entries["fallbacks"][1], "policy.fallbacks"))
        if "maxDepth" in entries:
            depth = r.number(entries["maxDepth"][1], "policy.maxDepth", minimum=1, maximum=MAX_AGENT_DEPTH, integer=True)
            config = replace(config, max_depth=int(depth))
        if "loopWindow" in entries:
            config = replace(config, loop_window=r.number(entries["loopWindow"][1], "policy.loopWindow", maximum=MAX_SECONDS))
        if "targetHints" in entries:
            hints = entries["targetHints"][1]
            pairs = {} if r.is_null(hints) else r.mapping(hints, "policy.targetHints")
            config = replace(
                config, target_hints={k: r.string(v, f"policy.targetHints.{k}") for k, (_, v) in pairs.items()}
            )
        return config

    def agent_lists(self, node: Node, what: str) -> dict[str, tuple[str, ...]]:
        r = self.r
        if r.is_null(node):
            return {}
        result: dict[str, tuple[str, ...]] = {}
        for agent, (_, value) in r.mapping(node, what).items():
            items = r.sequence(value, f"{what}.{agent}")
            result[agent] = tuple(r.string(item, f"{what}.{agent} entry") for item in items)
        return result


def _verbatim(node: Node) -> bool:
    """True when the scalar's characters sit in the file as written: one line, no escapes."""
    if node.start_mark.line != node.end_mark.line:
        return False
    quotes = 2 if node.style in ("'", '"') else 0
    return node.end_mark.column - node.start_mark.column - quotes == len(str(node.value))


def _hint(text: str, choices: list[str]) -> str:
    hint = did_you_mean(text, choices)
    return hint if "did you mean" in hint else ""
