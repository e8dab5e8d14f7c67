"""The functions a flow may call (`fn(args)`, `lib.fn(args)`): a fixed table of pure helpers.

Nothing else is callable from a `.sr` file: names are looked up here, never in Python's
namespace, so a hostile workflow cannot reach anything the table does not list.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from engine.runtime.flow_api import FlowError


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": lambda v: len(v),
    "length": lambda v: len(v),
    "str": _text,
    "text": _text,
    "int": lambda v: int(v),
    "float": lambda v: float(v),
    "upper": lambda v: _text(v).upper(),
    "lower": lambda v: _text(v).lower(),
    "trim": lambda v: _text(v).strip(),
    "strip": lambda v: _text(v).strip(),
    "split": lambda v, sep=None: _text(v).split(sep),
    "join": lambda items, sep="": sep.join(_text(i) for i in items),
    "replace": lambda v, old, new: _text(v).replace(old, new),
    "keys": lambda v: list(v.keys()),
    "values": lambda v: list(v.values()),
    "json": lambda v: json.dumps(v, ensure_ascii=False, default=str),
    "to_json": lambda v: json.dumps(v, ensure_ascii=False, default=str),
    "parse_json": lambda v: json.loads(v),
    "from_json": lambda v: json.loads(v),
    "min": lambda *v: min(v[0]) if len(v) == 1 else min(v),
    "max": lambda *v: max(v[0]) if len(v) == 1 else max(v),
    "sum": lambda v: sum(v),
    "range": lambda *v: list(range(*v)),
    "first": lambda v: v[0] if v else None,
    "last": lambda v: v[-1] if v else None,
}


def call_function(name: str, args: list[Any]) -> Any:
    short = name.rsplit(".", 1)[-1]
    fn = FUNCTIONS.get(short)
    if fn is None:
        raise FlowError(f"unknown function {name!r} (available: {', '.join(sorted(FUNCTIONS))})")
    return fn(*args)
