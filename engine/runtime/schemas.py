"""`expecting Schema` / `expecting Schema[]`: read an agent's reply as JSON and check it."""

from __future__ import annotations

import json
import re
from typing import Any

from engine.escalation.json_scan import json_values
from engine.flow.spec import SchemaSpec, TypeSpec

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class SchemaMismatch(Exception):
    pass


def parse_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, a fenced block, or the first object/array."""
    candidates = [text.strip()] + [m.strip() for m in _FENCE.findall(text)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):  # deep nesting is not JSON we can use either
            pass
    for value in json_values(text, "{["):  # linear: a reply of a million `{` is hostile
        return value
    raise SchemaMismatch("the reply is not JSON")


def check(value: Any, schema: str, schemas: dict[str, SchemaSpec], as_list: bool) -> None:
    """Raise SchemaMismatch naming the first wrong field."""
    if as_list:
        if not isinstance(value, list):
            raise SchemaMismatch(f"expected a JSON array of {schema}")
        for index, item in enumerate(value):
            _check_schema(item, schemas[schema], schemas, f"[{index}]")
    else:
        _check_schema(value, schemas[schema], schemas, "")


def _check_schema(value: Any, spec: SchemaSpec, schemas: dict[str, SchemaSpec], where: str) -> None:
    if not isinstance(value, dict):
        raise SchemaMismatch(f"{where or 'the reply'}: expected an object of {spec.name}")
    for name, type_ in spec.fields.items():
        path = f"{where}.{name}" if where else name
        if name not in value or value[name] is None:
            if not type_.optional:
                raise SchemaMismatch(f"missing field {path!r}")
            continue
        _check_type(value[name], type_, schemas, path)


def _check_type(value: Any, type_: TypeSpec, schemas: dict[str, SchemaSpec], path: str) -> None:
    kind = type_.kind
    ok = {
        "string": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
    }
    if kind in ok:
        if not ok[kind](value):
            raise SchemaMismatch(f"field {path!r} must be {kind}")
    elif kind == "list":
        if not isinstance(value, list):
            raise SchemaMismatch(f"field {path!r} must be a list")
        for index, item in enumerate(value):
            if type_.item is not None:
                _check_type(item, type_.item, schemas, f"{path}[{index}]")
    elif kind == "schema" and type_.schema in schemas:
        _check_schema(value, schemas[type_.schema], schemas, path)


def describe(schema: str, schemas: dict[str, SchemaSpec], as_list: bool) -> str:
    """A short JSON shape for the corrective message."""
    spec = schemas[schema]
    fields = ", ".join(f'"{n}": {_type_name(t)}' for n, t in spec.fields.items())
    shape = "{" + fields + "}"
    return f"[{shape}, ...]" if as_list else shape


def _type_name(type_: TypeSpec) -> str:
    if type_.kind == "list":
        base = f"list[{_type_name(type_.item) if type_.item else 'any'}]"
    elif type_.kind == "schema":
        base = str(type_.schema)
    else:
        base = type_.kind
    return base + ("?" if type_.optional else "")
