"""The `--script` file: the offline model's replies per agent, validated with positions.

Format (contract, "Scripted model file"): `agents: {NAME: [REPLY, ...]}` where a reply is a plain
string, or a mapping with exactly one of `text`, `tool` (+ `args`), `escalate` (the seed 004
escalation fields) and an optional `when` (case-insensitive substring of the latest input).
Any problem is a `ScriptError` whose text is `FILE:LINE:COL: message`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class ScriptError(Exception):
    """A bad script file; str() is the one-line `FILE:LINE:COL: message`."""

    def __init__(self, file: str, line: int, column: int, message: str) -> None:
        super().__init__(f"{file}:{line}:{column}: {message}")
        self.file, self.line, self.column, self.message = file, line, column, message


@dataclass(frozen=True)
class Reply:
    """One scripted model turn."""

    kind: str  # "text" | "tool" | "escalate"
    text: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    escalation: dict[str, Any] = field(default_factory=dict)
    when: str | None = None
    line: int = 0

    def matches(self, latest_input: str) -> bool:
        return self.when is None or self.when.lower() in latest_input.lower()


@dataclass(frozen=True)
class Script:
    """All agents' replies; immutable: each run keeps its own cursor (ScriptCursor)."""

    agents: dict[str, tuple[Reply, ...]]
    path: str = "<script>"

    @classmethod
    def empty(cls) -> "Script":
        return cls({}, "<no script>")


_REPLY_KEYS = {"text", "tool", "escalate"}
_ALLOWED_KEYS = _REPLY_KEYS | {"when", "args"}


def load_script(path: Path | str) -> Script:
    """Read and validate a script file; raises ScriptError (also for unreadable files)."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScriptError(name, 1, 1, f"cannot read script file: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_script(text, name)


def parse_script(text: str, name: str = "<script>") -> Script:
    loader = yaml.SafeLoader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            raise ScriptError(name, line, col, f"invalid YAML: {exc.problem or exc}") from None
        except yaml.YAMLError as exc:
            raise ScriptError(name, 1, 1, f"invalid YAML: {exc}") from None
        return _Builder(loader, name).script(root)
    finally:
        loader.dispose()


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, name: str) -> None:
        self.loader, self.name = loader, name

    def error(self, node: yaml.Node | None, message: str) -> ScriptError:
        if node is None:
            return ScriptError(self.name, 1, 1, message)
        return ScriptError(self.name, node.start_mark.line + 1, node.start_mark.column + 1, message)

    def value(self, node: yaml.Node) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.error(node, f"invalid value: {exc}") from None

    def pairs(self, node: yaml.Node, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a mapping")
        out = []
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(key_node, f"{what}: keys must be names")
            key = str(key_node.value)
            if key in seen:
                raise self.error(key_node, f"duplicate key {key!r}")
            seen.add(key)
            out.append((key, key_node, value_node))
        return out

    def script(self, root: yaml.Node | None) -> Script:
        if root is None:
            raise self.error(None, "empty script file: expected a mapping with an 'agents' key")
        agents_node = None
        for key, key_node, value_node in self.pairs(root, "the script"):
            if key != "agents":
                raise self.error(key_node, f"unknown key {key!r} (expected 'agents')")
            agents_node = value_node
        if agents_node is None:
            raise self.error(root, "missing key 'agents'")
        if isinstance(agents_node, yaml.ScalarNode) and agents_node.tag.endswith(":null"):
            return Script({}, self.name)
        agents: dict[str, tuple[Reply, ...]] = {}
        for agent, _key_node, replies_node in self.pairs(agents_node, "'agents'"):
            if not isinstance(replies_node, yaml.SequenceNode):
                raise self.error(replies_node, f"agent {agent!r}: expected a list of replies")
            agents[agent] = tuple(self.reply(agent, n) for n in replies_node.value)
        return Script(agents, self.name)

    def reply(self, agent: str, node: yaml.Node) -> Reply:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode):
            value = self.value(node)
            if not isinstance(value, str):
                raise self.error(node, f"agent {agent!r}: a reply is a string or a mapping with text, tool or escalate")
            return Reply("text", text=value, line=line)
        fields = {key: (key_node, value_node) for key, key_node, value_node in self.pairs(node, "a reply")}
        for key, (key_node, _v) in fields.items():
            if key not in _ALLOWED_KEYS:
                raise self.error(key_node, f"unknown reply key {key!r} (expected text, tool, args, escalate or when)")
        kinds = [k for k in fields if k in _REPLY_KEYS]
        if len(kinds) != 1:
            raise self.error(node, f"agent {agent!r}: a reply needs exactly one of text, tool, escalate")
        kind = kinds[0]
        when = None
        if "when" in fields:
            when = self.value(fields["when"][1])
            if not isinstance(when, (str, int, float)) or isinstance(when, bool):
                raise self.error(fields["when"][1], "'when' must be a string")
            when = str(when)
        if "args" in fields and kind != "tool":
            raise self.error(fields["args"][0], "'args' only goes with 'tool'")
        value_node = fields[kind][1]
        value = self.value(value_node)
        if kind == "text":
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise self.error(value_node, "'text' must be a string")
            return Reply("text", text=str(value), when=when, line=line)
        if kind == "tool":
            if not isinstance(value, str) or not value.strip():
                raise self.error(value_node, "'tool' must be a tool name")
            args: Any = {}
            if "args" in fields:
                args = self.value(fields["args"][1])
                if args is None:
                    args = {}
                if not isinstance(args, dict):
                    raise self.error(fields["args"][1], "'args' must be a mapping")
            return Reply("tool", tool=value.strip(), args=args, when=when, line=line)
        if not isinstance(value, dict):
            raise self.error(value_node, "'escalate' must be a mapping of escalation fields")
        if "question" not in value:
            raise self.error(value_node, "'escalate' needs a 'question'")
        if "options" in value and not isinstance(value["options"], list):
            raise self.error(value_node, "'escalate.options' must be a list")
        return Reply("escalate", escalation=value, when=when, line=line)
