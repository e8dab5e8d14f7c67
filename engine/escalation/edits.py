"""Edited tool arguments, as a person types them (the console's editor, `escalate answer --args`):
a JSON object, or one line saying why not."""

from __future__ import annotations

import json
from typing import Any

MAX_ARGS_CHARS = 1_000_000  # a tool's arguments, not a data file


def edited_args(text: str) -> dict[str, Any] | str:
    """The object `text` holds, or why it is refused (one line)."""
    if len(text) > MAX_ARGS_CHARS:
        return f"{len(text)} characters: at most {MAX_ARGS_CHARS}"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return f"not JSON: {str(exc).splitlines()[0][:200]}"
    if not isinstance(value, dict):
        return 'must be a JSON object, e.g. {"path": "a.txt"}'
    return value
