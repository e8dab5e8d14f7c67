"""Where a workspace keeps the rules taught from its decisions. Its own module so that the
loader (which layers that file over the shipped rules) and the rule book (which saves taught
rules there) both read the one path without importing each other."""

from __future__ import annotations

from pathlib import Path

WORKSPACE_RULES = Path(".escalate") / "rules.yaml"  # taught rules, layered over the shipped ones


def workspace_rules_path(workspace: Path | None = None) -> Path:
    """`.escalate/rules.yaml` under `workspace` (default: the current folder, where the default
    database lives too)."""
    return (workspace if workspace is not None else Path.cwd()) / WORKSPACE_RULES
