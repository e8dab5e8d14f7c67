"""Rules taught from a decision, written into a rules file the user also edits by hand.

A taught rule is scoped as narrowly as the request it came from: the task's override, and an
anchored, case-sensitive regex that matches the whole text of exactly that tool call (or that
escalation) and nothing longer (`rm -rf build` never matches `rm -rf build; rm -rf /` nor
`rm -rf /`). The file is edited with ruamel.yaml's round trip, so its comments, key order and
layout stay as the user wrote them, and it is checked twice with the loader (rules.loader):
as it is before the edit, and as it will be written; it is replaced atomically, so a failed
edit leaves the file as it was.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from engine.files import replace_text
from engine.kernel.model import Escalation
from rules.book import RuleBook
from rules.loader import parse_rules
from rules.matcher import REGEX_PREFIX, Activity, normalize
from rules.model import Action, Rule, Rules
from rules.yamlnodes import YamlError, read_text

MAX_TAUGHT_CHARS = 4000  # a request longer than this is not saved as an exact rule
EXACT_PREFIX = f"{REGEX_PREFIX}(?-i)^"  # case-sensitive, anchored at both ends

_SPECIAL = frozenset("\\.+*?()|[]{}^$")  # RE2's metacharacters outside a class: escaped


class TeachError(ValueError):
    """A rule that cannot be saved: why, in one line (nothing was written)."""


def exact_pattern(text: str) -> str:
    """A rule pattern matching exactly `text`, whole, case-sensitively. Raises TeachError for a
    text too long to be a useful exact rule."""
    if len(text) > MAX_TAUGHT_CHARS:
        raise TeachError(f"the request is {len(text)} characters long: at most {MAX_TAUGHT_CHARS} can be saved as an exact rule")
    return EXACT_PREFIX + "".join(_escape(ch) for ch in text) + "$"


def _escape(ch: str) -> str:
    if ch in _SPECIAL:
        return "\\" + ch
    if ch.isprintable():
        return ch
    return f"\\x{{{ord(ch):x}}}"  # a newline, a tab, a control or format character: by its code


def tool_pattern(tool: str, args: dict[str, Any]) -> str:
    return exact_pattern(Activity.of_tool(tool, args).raw)


def escalation_pattern(escalation: Escalation) -> str:
    return exact_pattern(Activity.of_escalation(escalation).raw)


def add_rule(path: Path, task: str, pattern: str, action: Action, taught: str) -> Rule:
    """Append a taught rule to `task`'s override in `path` (created when missing); returns the
    rule as the loader reads it back from the written file."""
    text = _current(path)
    yaml = _round_trip(text)
    doc = yaml.load(text) if text.strip() else None
    doc = _mapping(doc)
    rules_map = _child_mapping(doc, "escalationRules")
    overrides = _child_mapping(rules_map, "taskOverrides")
    name = next((key for key in overrides if isinstance(key, str) and normalize(key) == normalize(task)), task)
    override = _child_mapping(overrides, name)
    items = override.get("rules")
    if not _is_seq(items):
        from ruamel.yaml.comments import CommentedSeq

        items = CommentedSeq()
        override["rules"] = items
    from ruamel.yaml.comments import CommentedMap

    entry = CommentedMap()
    entry["pattern"] = pattern
    entry["action"] = action.value
    entry["taught"] = taught
    items.append(entry)
    written = _write(path, yaml, doc)
    found = [r for o in written.task_overrides.values() for r in o.rules if r.taught == taught and r.pattern.source == pattern]
    if not found:
        raise TeachError(f"{path}: the saved rule was not read back")  # cannot happen with a valid dump
    return found[-1]


def remove_rule(path: Path, rule: Rule) -> None:
    """Remove `rule` (found by its line and pattern) from `path`; comments elsewhere stay."""
    text = _current(path)
    yaml = _round_trip(text)
    doc = _mapping(yaml.load(text))
    for items in _rule_lists(doc):
        for index, item in enumerate(items):
            if _at(item, rule):
                del items[index]
                _write(path, yaml, doc)
                return
    raise TeachError(f"{rule.where}: the rule is no longer in the file (edited meanwhile?)")


def _current(path: Path) -> str:
    """The file as it is, checked by the loader first: a file the loader refuses is not edited."""
    if not path.exists():
        return ""
    try:
        text = read_text(str(path))
        parse_rules(text, str(path), base=Rules())
    except YamlError as exc:
        raise TeachError(str(exc).splitlines()[0]) from None
    return text


def _round_trip(text: str) -> Any:
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip: comments, order and quoting kept
    yaml.preserve_quotes = True
    yaml.width = 4096  # long patterns stay on one line
    mapping, offset = _indents(text)
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    return yaml


def _indents(text: str) -> tuple[int, int]:
    """The file's own indentation: of a nested mapping, and of a list's dash under its key
    (ruamel.yaml writes one style for the whole file; the shipped files' is 2 and 2)."""
    mapping, offset = 2, 2
    found_mapping = found_offset = False
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for above, line in zip(lines, lines[1:]):
        step = (len(line) - len(line.lstrip())) - (len(above) - len(above.lstrip()))
        if step <= 0 or not above.split(" #", 1)[0].rstrip().endswith(":"):
            continue
        if line.lstrip().startswith("- ") and not found_offset:
            offset, found_offset = step, True
        elif not line.lstrip().startswith("- ") and not found_mapping:
            mapping, found_mapping = step, True
        if found_mapping and found_offset:
            break
    return mapping, offset


def _write(path: Path, yaml: Any, doc: Any) -> Rules:
    out = io.StringIO()
    yaml.dump(doc, out)
    text = out.getvalue()
    try:
        rules = parse_rules(text, str(path), base=Rules())  # what is written must load
    except YamlError as exc:
        raise TeachError(f"the edited file would not load: {str(exc).splitlines()[0]}") from None
    try:
        replace_text(path, text)
    except OSError as exc:
        raise TeachError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return rules


def _mapping(doc: Any) -> Any:
    from ruamel.yaml.comments import CommentedMap

    if doc is None:
        return CommentedMap()
    if not isinstance(doc, CommentedMap):
        raise TeachError("the rules file is not a mapping")
    return doc


def _child_mapping(parent: Any, key: str) -> Any:
    from ruamel.yaml.comments import CommentedMap

    child = parent.get(key)
    if not isinstance(child, CommentedMap):
        child = CommentedMap()
        parent[key] = child
    elif not child:
        child.fa.set_block_style()  # `taskOverrides: {}` grows as a block, not inline
    return child


def _is_seq(value: Any) -> bool:
    from ruamel.yaml.comments import CommentedSeq

    return isinstance(value, CommentedSeq)


def _rule_lists(doc: Any) -> list[Any]:
    section = doc.get("escalationRules")
    if not hasattr(section, "get"):
        return []
    lists = [section.get("global")]
    overrides = section.get("taskOverrides")
    if hasattr(overrides, "values"):
        lists += [o.get("rules") for o in overrides.values() if hasattr(o, "get")]
    return [items for items in lists if _is_seq(items)]


def _at(item: Any, rule: Rule) -> bool:
    """The YAML item the loader read as `rule`: same line (ruamel counts from 0), same pattern."""
    return hasattr(item, "lc") and item.lc.line + 1 == rule.line and item.get("pattern") == rule.pattern.source
