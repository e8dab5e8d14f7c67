"""Values as JSON holds them: run events and stored escalations both carry agent output and flow
values, which may be anything."""

from __future__ import annotations

from typing import Any


def jsonable(value: Any) -> Any:
    """`value` with anything not JSON turned into its text (dict keys too)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)
