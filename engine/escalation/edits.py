"""Edited tool arguments, as a person types them (the console's editor, `escalate answer --args`),
in the part that needs no tool: a JSON object of bounded size, or one line saying why not.

Checking an edit against the tool's own schema is the tools' job (engine/runtime/tools/edits.py);
the run's desk is handed that check (`EditCheck`) and applies it before the rules read the edit."""

from __future__ import annotations

import json
from typing import Any, Callable

MAX_ARGS_CHARS = 1_000_000  # a tool's arguments, not a data file

# (tool, edited arguments) -> the arguments as the tool takes them, or why not (one line)
EditCheck = Callable[[str, Any], "dict[str, Any] | str"]


def parsed_edit(text: str) -> dict[str, Any] | str:
    """The JSON object `text` holds, or why it is refused (one line)."""
    if len(text) > MAX_ARGS_CHARS:
        return f"{len(text)} characters: at most {MAX_ARGS_CHARS}"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not JSON: {str(exc).splitlines()[0][:200]}"
    if not isinstance(value, dict):
        return 'must be a JSON object, e.g. {"path": "a.txt"}'
    return value


def object_edit(tool: str, args: Any) -> dict[str, Any] | str:
    """The check that needs no tool: edited arguments are a JSON object. A desk made without the
    tools' check (tests of the rules alone) applies only this one."""
    return args if isinstance(args, dict) else "must be a JSON object"
