"""Edited tool arguments, as a person types them (the console's editor, `escalate answer --args`):
a JSON object that fits the tool's schema, or one line saying why not. The run's desk checks an
edit the same way (`checked_edit`) before the rules read it."""

from __future__ import annotations

import json
from typing import Any

from engine.runtime.tools.arguments import ArgumentsRefused
from engine.runtime.tools.registry import check_builtin_args

MAX_ARGS_CHARS = 1_000_000  # a tool's arguments, not a data file


def edited_args(text: str, tool: str) -> dict[str, Any] | str:
    """The arguments for `tool` that `text` holds, or why they are refused (one line)."""
    if len(text) > MAX_ARGS_CHARS:
        return f"{len(text)} characters: at most {MAX_ARGS_CHARS}"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not JSON: {str(exc).splitlines()[0][:200]}"
    if not isinstance(value, dict):
        return 'must be a JSON object, e.g. {"path": "a.txt"}'
    return checked_edit(tool, value)


def checked_edit(tool: str, args: Any) -> dict[str, Any] | str:
    """Edited arguments as `tool` takes them, or why not (one line). A built-in tool's are checked
    against its schema, as a run checks the model's; another tool's (an MCP server's, an agent
    used as a tool) are checked by the run against that very tool, before it runs."""
    try:
        checked = check_builtin_args(tool, args)
    except ArgumentsRefused as exc:
        return str(exc)
    if checked is not None:
        return checked
    return args if isinstance(args, dict) else "must be a JSON object"
