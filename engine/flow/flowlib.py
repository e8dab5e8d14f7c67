"""Pure helpers that generated flow code calls (imported as `rt`). No I/O, no ADK.

Every value here may come from an agent (untrusted text): nothing is evaluated, formatted as
markup or used as code. Errors a user can cause at run time are FlowErrors with the line.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from engine.flow.flow_api import FlowError

# ------------------------------------------------------------------ normalized equality (seed 001)

_MARKDOWN = re.compile(r"[*_`#]")
_PUNCT = str.maketrans("", "", ".!?,;:")
_SPACE = re.compile(r"\s+")


def normalize(value: Any) -> str:
    """Seed 001: markdown marks removed, punctuation `. ! ? , ; :` removed, lower case,
    whitespace collapsed to one space, stripped."""
    text = to_text(value)
    text = _MARKDOWN.sub("", text)
    text = text.translate(_PUNCT)
    text = text.lower()
    return _SPACE.sub(" ", text).strip()


def normalized_equals(left: Any, right: Any) -> bool:
    """`a ~ b`."""
    return normalize(left) == normalize(right)


# ------------------------------------------------------------------ text

def to_text(value: Any) -> str:
    """A value as text: strings as they are, None as "", structures as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    try:
        return json.dumps(_plain(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return value


def interpolate(parts: Iterable[Any]) -> str:
    """Join literal parts and interpolated values into one text."""
    return "".join(p if isinstance(p, str) else to_text(p) for p in parts)


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


def soft_var(variables: dict[str, Any], name: str, path: tuple[str, ...], raw: str) -> Any:
    """`$name.path` inside text: its value when set, else the text exactly as written."""
    if name not in variables:
        return raw
    value = variables[name]
    for part in path:
        value = _lookup(value, part, UNSET)
        if value is UNSET:
            return raw
    return value


# ------------------------------------------------------------------ property access

def _lookup(value: Any, name: str, default: Any) -> Any:
    if isinstance(value, dict):
        return value.get(name, default)
    if isinstance(value, (str, bytes, int, float, bool, list, tuple)) or value is None:
        if isinstance(value, str) and name in ("length",):
            return len(value)
        if isinstance(value, (list, tuple)) and name in ("length",):
            return len(value)
        return default
    if name.startswith("_"):
        return default  # never reach Python internals from a .sr file
    return getattr(value, name, default)


def prop(value: Any, name: str) -> Any:
    """`value.name` on a dict (key) or an object (public attribute); missing -> null."""
    result = _lookup(value, name, None)
    if isinstance(value, str) and result is None:
        parsed = _json_object(value)
        if parsed is not None:
            return _lookup(parsed, name, None)
    return result


def path(value: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        value = prop(value, name)
    return value


def _json_object(text: str) -> Any:
    s = text.strip()
    if not s.startswith("{"):
        return None
    try:
        return json.loads(s)
    except ValueError:
        return None


def set_path(target: Any, names: tuple[str, ...], value: Any, line: int) -> None:
    """`$obj.a.b = value`: intermediate dicts are created when missing."""
    for name in names[:-1]:
        nxt = _lookup(target, name, None)
        if nxt is None and isinstance(target, dict):
            nxt = target[name] = {}
        target = nxt
    if isinstance(target, dict):
        target[names[-1]] = value
        return
    raise FlowError(f"cannot set property '{names[-1]}' on a {type_name(target)}", line)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


# ------------------------------------------------------------------ operators

def add(a: Any, b: Any, line: int = 0) -> Any:
    """`+`: list + list concatenates, list + x appends, text + x joins as text, else numbers."""
    if isinstance(a, list):
        return a + list(b) if isinstance(b, (list, tuple)) else a + [b]
    if isinstance(a, str) or isinstance(b, str):
        return to_text(a) + to_text(b)
    if a is None and isinstance(b, list):
        return list(b)
    return _numeric("+", a, b, line)


def arith(op: str, a: Any, b: Any, line: int = 0) -> Any:
    if op == "+":
        return add(a, b, line)
    return _numeric(op, a, b, line)


def _numeric(op: str, a: Any, b: Any, line: int) -> Any:
    x, y = _num(a, op, line), _num(b, op, line)
    try:
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if op == "/":
            return x / y
        if op == "%":
            return x % y
    except ZeroDivisionError:
        raise FlowError("division by zero", line) from None
    raise FlowError(f"unknown operator {op!r}", line)


def _num(v: Any, op: str, line: int) -> int | float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if isinstance(v, str):
            try:
                return float(v) if "." in v else int(v)
            except ValueError:
                pass
        raise FlowError(f"'{op}' needs numbers, got {type_name(v)}", line)
    return v


def neg(v: Any, line: int = 0) -> Any:
    return -_num(v, "-", line)


def eq(a: Any, b: Any) -> bool:
    return a == b


def compare(op: str, a: Any, b: Any, line: int = 0) -> bool:
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == "~":
        return normalized_equals(a, b)
    if op == "contains":
        return contains(a, b)
    try:
        if isinstance(a, str) != isinstance(b, str):
            a, b = _num(a, op, line), _num(b, op, line)
        if op == "<":
            return a < b
        if op == ">":
            return a > b
        if op == "<=":
            return a <= b
        if op == ">=":
            return a >= b
    except TypeError:
        raise FlowError(f"cannot compare {type_name(a)} {op} {type_name(b)}", line) from None
    raise FlowError(f"unknown operator {op!r}", line)


def contains(a: Any, b: Any) -> bool:
    """`a contains b` is `b in a`; text containment is on text."""
    if a is None:
        return False
    if isinstance(a, str):
        return to_text(b) in a
    if isinstance(a, dict):
        return b in a
    try:
        return b in a
    except TypeError:
        return False


def truthy(v: Any) -> bool:
    return bool(v)


# ------------------------------------------------------------------ lists and iteration

def iterate(value: Any, line: int = 0) -> list[Any]:
    """What `for $x in value` walks: list items, object values... a JSON list in text, or lines."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("["):
            try:
                parsed = json.loads(s)
                if isinstance(parsed, list):
                    return parsed
            except ValueError:
                pass
        return [ln for ln in value.splitlines() if ln.strip()]
    if hasattr(value, "__iter__"):
        return list(value)
    raise FlowError(f"cannot iterate over a {type_name(value)}", line)


def filter_list(value: Any, keep: Callable[[Any], Any], line: int = 0) -> list[Any]:
    """`filter L where cond`: the items for which cond holds."""
    return [item for item in iterate(value, line) if keep(item)]


def push(target: Any, value: Any, role: str | None, line: int = 0) -> list[Any]:
    """`push e [as role] to $list`: appends (creating the list when unset) and returns it."""
    item = {"role": role, "content": value} if role else value
    if target is None or target is UNSET:
        return [item]
    if not isinstance(target, list):
        raise FlowError(f"push needs a list, got {type_name(target)}", line)
    target.append(item)
    return target


def snapshot(value: Any) -> Any:
    """A copy of a value as it is now (for `on escalate return e`)."""
    try:
        return copy.deepcopy(value)
    except Exception:  # an exotic object: keep the reference
        return value


def snapshot_var(variables: dict[str, Any], name: str, line: int) -> Any:
    """`snapshot($name)`, or a Deferred error when it is unset (raised only if returned)."""
    if name not in variables:
        return Deferred(FlowError(f"variable ${name} is not set", line))
    return snapshot(variables[name])


@dataclass(frozen=True)
class Deferred:
    """An `on escalate return e` value whose evaluation failed; re-raised only if used."""

    error: Exception


def resolve(value: Any) -> Any:
    if isinstance(value, Deferred):
        raise value.error
    return value


# ------------------------------------------------------------------ control flow across nested code

class ContinueLoop(Exception):
    """`continue` from inside a parallel branch or an `on failure` wrapper."""


class FlowReturn(Exception):
    """`return` from inside a parallel branch."""

    def __init__(self, value: Any) -> None:
        super().__init__("return")
        self.value = value


MAX_STEP_RETRIES = 3


def loop_count(value: Any, line: int = 0) -> int:
    """`loop max N`: N as a whole, non-negative count."""
    n = _num(value, "loop max", line)
    if n < 0 or int(n) != n:
        raise FlowError(f"loop max needs a whole number >= 0, got {to_text(value)}", line)
    return int(n)


# ------------------------------------------------------------------ built-in functions

def _join(items: Any, sep: Any = ", ") -> str:
    return to_text(sep).join(to_text(i) for i in iterate(items))


def _int(v: Any) -> int:
    """`int("3.7")` is 3, as `int(3.7)` is: text is read as a number first."""
    if isinstance(v, str):
        return int(float(v)) if any(c in v for c in ".eE") else int(v)
    return int(v)


def _len(v: Any) -> int:
    return len(v) if isinstance(v, (str, list, tuple, dict)) else len(iterate(v))


def _keys(v: Any) -> list[Any]:
    return list(v.keys()) if isinstance(v, dict) else []


def _values(v: Any) -> list[Any]:
    return list(v.values()) if isinstance(v, dict) else iterate(v)


def _json(v: Any) -> str:
    return json.dumps(_plain(v), ensure_ascii=False, default=str)


def _parse_json(v: Any) -> Any:
    return json.loads(to_text(v))


def _first(v: Any) -> Any:
    items = iterate(v)
    return items[0] if items else None


def _last(v: Any) -> Any:
    items = iterate(v)
    return items[-1] if items else None


def _range(*a: Any) -> list[int]:
    bounds = [_int(x) for x in a]
    r = range(*bounds)
    if len(r) > MAX_RANGE:
        raise FlowError(f"range() of {len(r)} numbers: at most {MAX_RANGE}")
    return list(r)


MAX_RANGE = 1_000_000  # a list a flow may build with range(): far past any loop, far below memory

# THE table of functions a .sr file may call, `f(x)` and `lib.f(x)` alike (the last part of a
# dotted name is looked up here, never in Python's namespace). All are pure: no I/O, so they
# also work in prompt bodies, `escalate if` and `filter` conditions.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": _len,
    "length": _len,
    "str": to_text,
    "text": to_text,
    "int": _int,
    "float": lambda v: float(v),
    "lower": lambda v: to_text(v).lower(),
    "upper": lambda v: to_text(v).upper(),
    "trim": lambda v: to_text(v).strip(),
    "strip": lambda v: to_text(v).strip(),
    "join": _join,
    "split": lambda v, sep=None: to_text(v).split(None if sep is None else to_text(sep)),
    "replace": lambda v, old, new: to_text(v).replace(to_text(old), to_text(new)),
    "json": _json,
    "to_json": _json,
    "parse_json": _parse_json,
    "from_json": _parse_json,
    "normalize": normalize,
    "keys": _keys,
    "values": _values,
    "first": _first,
    "last": _last,
    "min": lambda *a: min(iterate(a[0]) if len(a) == 1 else a),
    "max": lambda *a: max(iterate(a[0]) if len(a) == 1 else a),
    "sum": lambda v: sum(iterate(v)),
    "round": lambda v, n=0: round(v, int(n)),
    "range": _range,
}


def builtin_function(name: str) -> Callable[..., Any] | None:
    """The function `name` (`len`, `lib.len`, `std.text.len`) calls, or None."""
    return FUNCTIONS.get(name.rsplit(".", 1)[-1])


def call_function(name: str, args: list[Any], line: int = 0) -> Any:
    """A call from a .sr file: a function of the table, or a FlowError that names them."""
    fn = builtin_function(name)
    if fn is None:
        raise FlowError(f"unknown function {name!r} (available: {', '.join(sorted(FUNCTIONS))})", line)
    try:
        return fn(*args)
    except FlowError as exc:
        raise FlowError(f"{name}(): {exc}", line or exc.line) from None
    except Exception as exc:  # user-caused: wrong argument types or count
        raise FlowError(f"{name}(): {exc}", line) from None
