"""The `--script` file: the offline model's replies per agent, validated with positions.

Format (contract, "Scripted model file"): `agents: {NAME: [REPLY, ...]}` where a reply is a plain
string, or a mapping with exactly one of `text`, `tool` (+ `args`), `escalate` (the seed 004
escalation fields), an optional `when` (case-insensitive substring of the latest input) and an
optional `usage: {input: N, output: N}` (the tokens the turn counts, for budgets).
Any problem is a `ScriptError` whose text is `FILE:LINE:COL: message` (the same YAML reader as
the rules and answers files).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from yaml.nodes import Node, ScalarNode

from rules.model import MAX_SECONDS
from rules.yamlnodes import Reader, YamlError, read_text

ScriptError = YamlError  # `FILE:LINE:COL: message`


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
    usage: tuple[int, int] = (0, 0)  # (input, output) tokens the turn counts against budgets

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


_KINDS = ("text", "tool", "escalate")
_KEYS = (*_KINDS, "args", "when", "usage")  # = rules/schema.py's ReplyEntry (a test keeps them equal)
_USAGE = ("input", "output")
MAX_USAGE = 10**12  # tokens in one scripted turn


def load_script(path: Path | str) -> Script:
    """Read and validate a script file; raises ScriptError (also for unreadable files)."""
    return parse_script(read_text(str(path)), str(path))


def parse_script(text: str, name: str = "<script>") -> Script:
    from rules.schema import ScriptFile, validate_document

    r = Reader(text, name)
    script = _parse(r, name)
    validate_document(ScriptFile, r, what="the script")  # what the checks below do not cover (usage)
    return script


def _parse(r: Reader, name: str) -> Script:
    if r.root is None:
        raise r.error(None, "empty script file: expected a mapping with an 'agents' key")
    entries = r.mapping(r.root, "the script", ("agents",))
    agents_node = r.require(entries, "agents", r.root, "the script")
    if r.is_null(agents_node):
        return Script({}, name)
    agents: dict[str, tuple[Reply, ...]] = {}
    for agent, (_key, replies) in r.mapping(agents_node, "'agents'").items():
        agents[agent] = tuple(_reply(r, agent, node) for node in r.sequence(replies, f"agent {agent!r}"))
    return Script(agents, name)


def _reply(r: Reader, agent: str, node: Node) -> Reply:
    line = node.start_mark.line + 1
    what = f"agent {agent!r}: reply"
    if isinstance(node, ScalarNode):
        return Reply("text", text=r.string(node, what, allow_empty=True), line=line)
    entries = r.mapping(node, what, _KEYS)
    kinds = [k for k in _KINDS if k in entries]
    if len(kinds) != 1:
        raise r.error(node, f"{what} needs exactly one of text, tool, escalate")
    kind = kinds[0]
    when = r.string(entries["when"][1], f"{what}: when") if "when" in entries else None
    if "args" in entries and kind != "tool":
        raise r.error(entries["args"][0], f"{what}: 'args' only goes with 'tool'")
    body = entries[kind][1]
    usage = _usage(r, entries["usage"][1], f"{what}: usage") if "usage" in entries else (0, 0)
    reply = _reply_body(r, what, kind, entries, body, when, line)
    return replace(reply, usage=usage) if usage != (0, 0) else reply


def _usage(r: Reader, node: Node, what: str) -> tuple[int, int]:
    fields = r.mapping(node, what, _USAGE)
    counts = [int(r.number(fields[k][1], f"{what}.{k}", maximum=MAX_USAGE, integer=True)) if k in fields else 0 for k in _USAGE]
    return counts[0], counts[1]


def _reply_body(r: Reader, what: str, kind: str, entries: dict[str, Any], body: Node, when: str | None, line: int) -> Reply:
    if kind == "text":
        return Reply("text", text=r.string(body, f"{what}: text", allow_empty=True), when=when, line=line)
    if kind == "tool":
        tool = r.string(body, f"{what}: tool").strip()
        args: dict[str, Any] = {}
        if "args" in entries and not r.is_null(entries["args"][1]):
            r.mapping(entries["args"][1], f"{what}: args")
            args = r.plain(entries["args"][1])
        return Reply("tool", tool=tool, args=args, when=when, line=line)
    # The script is the user's own file: its escalations are checked as strictly as the rules
    # (an agent's escalation text, untrusted, is read leniently by engine/escalation/protocol.py).
    fields = r.mapping(body, f"{what}: escalate")
    r.string(r.require(fields, "question", body, f"{what}: escalate"), f"{what}: escalate.question")
    for key in ("reason", "context"):
        if key in fields:
            r.string(fields[key][1], f"{what}: escalate.{key}", allow_empty=True)
    if "options" in fields:
        for option in r.sequence(fields["options"][1], f"{what}: escalate.options"):
            entries = r.mapping(option, f"{what}: escalate option")
            for key in ("id", "label"):
                r.string(r.require(entries, key, option, f"{what}: escalate option"), f"{what}: escalate option {key}")
    if "timeout" in fields and not r.is_null(fields["timeout"][1]):
        r.number(fields["timeout"][1], f"{what}: escalate.timeout", maximum=MAX_SECONDS)
    if "allowAgentDecision" in fields:
        r.boolean(fields["allowAgentDecision"][1], f"{what}: escalate.allowAgentDecision")
    return Reply("escalate", escalation=r.plain(body), when=when, line=line)
