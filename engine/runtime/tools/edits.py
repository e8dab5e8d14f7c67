"""Edited tool arguments checked as the tool takes them: the console's editor and `escalate
answer --args` check what a person typed here, and the engine hands `checked_edit` to the run's
desk, which checks an edit that reaches it the same way before the rules read it."""

from __future__ import annotations

from typing import Any

from engine.escalation.edits import object_edit, parsed_edit
from engine.runtime.tools.arguments import ArgumentsRefused
from engine.runtime.tools.registry import check_builtin_args


def edited_args(text: str, tool: str) -> dict[str, Any] | str:
    """The arguments for `tool` that `text` holds, or why they are refused (one line)."""
    value = parsed_edit(text)
    return value if isinstance(value, str) else checked_edit(tool, value)


def checked_edit(tool: str, args: Any) -> dict[str, Any] | str:
    """Edited arguments as `tool` takes them, or why not (one line). A built-in tool's are checked
    against its schema, as a run checks the model's; another tool's (an MCP server's, an agent
    used as a tool) are checked by the run against that very tool, before it runs."""
    try:
        checked = check_builtin_args(tool, args)
    except ArgumentsRefused as exc:
        return str(exc)
    return checked if checked is not None else object_edit(tool, args)
