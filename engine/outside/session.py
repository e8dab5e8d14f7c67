"""Who asks from outside (an agent's session) and what the rules say of its tool call: the part
of the desk (engine/outside/core.py) that opens nothing, imports no database and no asyncio:
`escalate hook` runs it at every tool call, and a call the rules decide ends there.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.kernel.frozen import Frozen

if TYPE_CHECKING:
    from engine.escalation.verdict import ToolVerdict
    from rules.model import Rules

KINDS = ("claude", "codex", "mcp")  # the runs table's `workflow` of an outside session
ID_CHARS = 24


class Session(Frozen):
    """Who asks: an outside agent's session, one run in the database."""

    kind: str  # KINDS: the agent program
    session_id: str  # the agent's own id of its session (Claude Code's `session_id`)
    project: Path  # its project folder (the hook's working folder)
    task: str  # the rules' task name: --task, else the project folder's name
    agent: str  # who asks within it: the kind, or a subagent's name

    @classmethod
    def of(cls, kind: str, session_id: str, project: Path, *, task: str | None = None,
           agent: str | None = None) -> "Session":
        if kind not in KINDS:
            raise ValueError(f"unknown outside agent {kind!r}")
        return cls(kind, session_id, project, task or project.name or "project", agent or kind)

    @property
    def run_id(self) -> str:
        return f"{self.kind}-{_digest(self.session_id)[:16]}"

    @property
    def keeps(self) -> bool:
        """Its requests outlive the process that asked (engine/durable/askers.py KEPT_KINDS)."""
        from engine.durable.askers import KEPT_KINDS

        return self.kind in KEPT_KINDS

    def request_id(self, key: str, attempt: int = 1, *, kept: bool = True) -> str:
        """The escalation id of this session's request `key` (Claude Code's tool_use_id, an MCP
        requestId): the same on every call, so a request asked again is found, not raised again.
        `attempt` > 1: asked again after the earlier one was withdrawn (its asker died). `kept`
        False: a request of a session that `keeps` which nobody can come back for (an MCP call
        without a requestId), marked so in its id: withdrawn once its asker is gone
        (engine/durable/askers.py ONCE)."""
        from engine.durable.askers import ONCE

        once = f"{ONCE}-" if self.keeps and not kept else ""
        base = f"{self.kind}-{once}{_digest(self.session_id + chr(0) + key)[:ID_CHARS]}"
        return base if attempt == 1 else f"{base}.{attempt}"


def load_rules(project: Path, given: str | None) -> "Rules":
    """The rules as `run` loads them: `--rules`, else the shipped rules with the project's
    `.escalate/rules.yaml` over them; from the project's snapshot of them while those files are
    unchanged (no YAML imported: rules/snapshot.py). Raises rules.loader.RulesError (one line)."""
    from rules.layering import remembered

    rules = remembered(given, workspace=project)
    if rules is not None:
        return rules
    from rules.loader import load_layered

    return load_layered(given, workspace=project)


def tool_verdict(rules: "Rules", asker: Session, tool: str, args: dict[str, Any]) -> ToolVerdict:
    """The rules' verdict on a tool call (the desk's, as for `.sr` tool calls: the tool's name
    and input as text, the task's overrides). Opens nothing."""
    from engine.escalation.verdict import tool_verdict as verdict_of

    return verdict_of(rules, asker.task, tool, args)


def _digest(text: str) -> str:
    import hashlib  # a call sent to a person only: loading OpenSSL costs a rule-decided call ~2 ms

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
