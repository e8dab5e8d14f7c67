"""A database is data, never code: what DBOS stores for a run is JSON, and a row stored any other
way is refused before DBOS reads it.

DBOS 3.4 pickles by default, and whatever serializer is configured it unpickles a value whose
row says `py_pickle` (`dbos/_serialization.py` `deserialize_value`): a crafted row in a shipped
`.escalate/escalate.db`, or in a shared PostgreSQL database, would run code as the user. So:

- DBOS is configured with its portable JSON serializer (`serializer()`);
- `scan` finds every stored value not written that way, before DBOS is launched and before a
  run is continued; those runs are refused (one line each), never handed to DBOS;
- `guard_pickle` makes DBOS's own pickle reader refuse, for a row written after the scan;
- `migrate` converts the pickle rows of this user's own databases (written by escalate before
  it used JSON) with an unpickler that only builds plain values (`PlainUnpickler`).
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import weakref
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # imported where used: steps.py (every run) needs only json_value
    import sqlalchemy as sa

JSON_FORMAT = "portable_json"  # DBOSPortableJSONSerializer's name, kept in each row it writes
PICKLE_FORMAT = "py_pickle"
NOT_READ = "an error recorded by an earlier escalate (not read back: it was pickled)"


class PickleRefused(Exception):
    """DBOS was about to unpickle a stored value."""


def serializer() -> Any:
    from dbos import DBOSPortableJSONSerializer

    return DBOSPortableJSONSerializer()


class _RefusingPickle:
    """Stands in for DBOS's module-level pickle serializer: writing pickle (our own objects) is
    harmless, reading it back is what runs code, so reading always refuses."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def name(self) -> str:
        return PICKLE_FORMAT

    def serialize(self, data: Any) -> str:
        return str(self._real.serialize(data))

    def deserialize(self, serialized_data: str) -> Any:
        raise PickleRefused("a stored value is a pickle (it could run code): refused; see `escalate trust --help`")


def guard_pickle() -> None:
    """Make DBOS refuse every pickled value it reads, in this process. DBOS 3.4 has no public
    switch for it: `deserialize_value`, `deserialize_args` and `deserialize_exception` read the
    module attribute `DBOSDefaultSerializer` at each call, so it is replaced (tested:
    tests/durable/test_pickle_rows.py proves a crafted row does not run with it)."""
    from dbos import _serialization

    current = _serialization.DBOSDefaultSerializer
    if not isinstance(current, _RefusingPickle):
        _serialization.DBOSDefaultSerializer = _RefusingPickle(current)  # type: ignore[assignment]


def json_value(value: Any) -> Any:
    """`value` as the JSON a step records and a replay gives back, so that a live run and its
    replay see the same thing: tuples and sets become lists, enums their value, and anything
    JSON cannot hold its `str`."""
    if value is None or isinstance(value, (bool, int, float, str)) and not isinstance(value, Enum):
        return value
    if isinstance(value, Enum):
        return json_value(value.value)
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(v) for v in value]
    return str(value)


# -- what is stored, and where ---------------------------------------------------------------

@dataclass(frozen=True)
class _Place:
    table: str
    values: tuple[str, ...]  # the columns holding serialized values
    label: str  # how a row is named to the person
    detail: str | None = None  # a column naming the row inside its workflow (step number, key)


# Every DBOS 3.4 table whose rows hold serialized values (dbos/_schemas/system_database.py).
# `workflow_input` and `workflow_output` take their format from `workflow_status`.
_PLACES = (
    _Place("workflow_status", ("inputs", "output", "error"), "workflow"),
    _Place("operation_outputs", ("output", "error"), "step", "function_id"),
    _Place("notifications", ("message",), "message", "topic"),
    _Place("workflow_events", ("value",), "event", "key"),
    _Place("workflow_events_history", ("value",), "event", "key"),
    _Place("streams", ("value",), "stream", "key"),
)
_SIDE = (("workflow_input", ("inputs",)), ("workflow_output", ("output", "error")))
_WORKFLOW = {"notifications": "destination_uuid"}  # the column naming the workflow, when not workflow_uuid


@dataclass(frozen=True)
class Refusal:
    workflow_id: str
    where: str  # e.g. "step 3 (model turn)", "inputs"
    format: str | None

    def line(self, url: str) -> str:
        kind = f"stored as {self.format}" if self.format else "stored without a format"
        return (f"{url}: run {self.workflow_id}: {self.where} is {kind}, not JSON: refused "
                "(a database is data, never code; this run is not continued)")


_reflected: "weakref.WeakKeyDictionary[sa.Engine, dict[str, sa.Table]]" = weakref.WeakKeyDictionary()


def _tables(conn: sa.Connection) -> dict[str, sa.Table]:
    """DBOS's tables as they are in this database (read once per engine: reading them costs
    tens of milliseconds, and every continued run is checked)."""
    import sqlalchemy as sa

    known = _reflected.get(conn.engine)
    if known is not None:
        return known
    schema = "dbos" if conn.dialect.name == "postgresql" else None  # DBOS's default system schema
    names = set(sa.inspect(conn).get_table_names(schema=schema))
    wanted = {p.table for p in _PLACES} | {t for t, _ in _SIDE}
    meta = sa.MetaData(schema=schema)
    tables = {n: sa.Table(n, meta, autoload_with=conn) for n in wanted & names}
    if "workflow_status" in tables:  # DBOS has made its tables: they stay
        _reflected[conn.engine] = tables
    return tables


def scan(engine: sa.Engine, workflow_id: str | None = None) -> list[Refusal]:
    """Every stored value (of one workflow, or all) that is not JSON: read without deserializing."""
    import sqlalchemy as sa

    with engine.connect() as conn:
        tables = _tables(conn)
        found: list[Refusal] = []
        for place in _PLACES:
            table = tables.get(place.table)
            if table is None or "serialization" not in table.c:
                continue
            wf = table.c[_WORKFLOW.get(place.table, "workflow_uuid")]
            columns = [wf, table.c.serialization]
            if place.detail is not None:
                columns.append(table.c[place.detail])
            if place.table == "operation_outputs":
                columns.append(table.c.function_name)
            value_cols = [table.c[c] for c in place.values if c in table.c]
            query = sa.select(*columns).where(_foreign(table.c.serialization), sa.or_(*(c.isnot(None) for c in value_cols)))
            if workflow_id is not None:
                query = query.where(wf == workflow_id)
            for row in conn.execute(query.limit(1000)):
                found.append(Refusal(str(row[0]), _where(place, row), row[1]))
        status = tables.get("workflow_status")
        for side, cols in _SIDE:  # values whose format the workflow's status row gives
            table = tables.get(side)
            if table is None or status is None:
                continue
            query = (sa.select(table.c.workflow_uuid, status.c.serialization)
                     .select_from(table.outerjoin(status, status.c.workflow_uuid == table.c.workflow_uuid))
                     .where(_foreign(status.c.serialization), sa.or_(*(table.c[c].isnot(None) for c in cols if c in table.c))))
            if workflow_id is not None:
                query = query.where(table.c.workflow_uuid == workflow_id)
            for row in conn.execute(query.limit(1000)):
                found.append(Refusal(str(row[0]), side.replace("workflow_", "workflow "), row[1]))
        return _unique(found)


def _foreign(column: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    import sqlalchemy as sa

    return sa.or_(column.is_(None), column != JSON_FORMAT)


def _where(place: _Place, row: Any) -> str:
    if place.table == "operation_outputs":
        return f"step {row[2]} ({row[3]})"
    if place.detail is not None:
        return f"{place.label} {str(row[2])[:80]!r}"
    return place.label


def _unique(found: Iterable[Refusal]) -> list[Refusal]:
    seen: dict[tuple[str, str], Refusal] = {}
    for refusal in found:
        seen.setdefault((refusal.workflow_id, refusal.where), refusal)
    return list(seen.values())


# -- migrating this user's own pickle rows ---------------------------------------------------

_PLAIN = {("builtins", n) for n in ("dict", "list", "str", "int", "float", "bool", "tuple", "set", "frozenset")}


class PlainUnpickler(pickle.Unpickler):
    """Builds only plain values: containers, strings, numbers, booleans and None (those need no
    class lookup at all). Any class or function named in the data is refused, so nothing runs."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _PLAIN:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not a plain value")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not plain values")


def plain_unpickle(text: str) -> Any:
    """A base64 pickle as DBOS stores it, read by `PlainUnpickler`; raises on anything else."""
    data = base64.b64decode(text.encode("ascii"), validate=True)
    return PlainUnpickler(io.BytesIO(data)).load()


def _to_json(value: Any) -> str:
    return json.dumps(json_value(value), separators=(",", ":"), ensure_ascii=False)


def migrate(engine: sa.Engine) -> tuple[int, list[Refusal]]:
    """Convert the pickle rows of a database this user wrote into JSON, one transaction; only
    plain values are converted (a recorded error becomes a portable error naming what it was not).
    Returns (rows converted, rows left as they were: refused later by `scan`)."""
    import sqlalchemy as sa

    converted = 0
    left: list[Refusal] = []
    with engine.begin() as conn:
        tables = _tables(conn)
        status = tables.get("workflow_status")
        if status is None or "serialization" not in status.c:
            return 0, []
        side = {n: tables[n] for n, _ in _SIDE if n in tables}
        for row in conn.execute(sa.select(status).where(status.c.serialization == PICKLE_FORMAT)).mappings().all():
            wf = row["workflow_uuid"]
            try:
                values = {"inputs": _inputs(row["inputs"]), "output": _value(row["output"]), "error": _error(row["error"])}
                extra = {}
                for name, table in side.items():
                    got = conn.execute(sa.select(table).where(table.c.workflow_uuid == wf)).mappings().first()
                    if got is not None:
                        extra[name] = {c: (_inputs(got[c]) if c == "inputs" else _error(got[c]) if c == "error" else _value(got[c]))
                                       for c in ("inputs", "output", "error") if c in table.c}
            except (pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError, IndexError, KeyError) as exc:
                left.append(Refusal(wf, f"workflow (not converted: {str(exc)[:120]})", PICKLE_FORMAT))
                continue
            conn.execute(sa.update(status).where(status.c.workflow_uuid == wf).values(serialization=JSON_FORMAT, **values))
            for name, cols in extra.items():
                table = side[name]
                conn.execute(sa.update(table).where(table.c.workflow_uuid == wf).values(**cols))
            converted += 1
        for place in _PLACES[1:]:
            table = tables.get(place.table)
            if table is None or "serialization" not in table.c:
                continue
            keys = [c for c in table.primary_key.columns] or list(table.c)
            for row in conn.execute(sa.select(table).where(table.c.serialization == PICKLE_FORMAT)).mappings().all():
                try:
                    values = {c: (_error(row[c]) if c == "error" else _value(row[c])) for c in place.values if c in table.c}
                except (pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError, IndexError, KeyError) as exc:
                    wf = row[_WORKFLOW.get(place.table, "workflow_uuid")]
                    left.append(Refusal(str(wf), f"{place.label} (not converted: {str(exc)[:120]})", PICKLE_FORMAT))
                    continue
                match = [k == row[k.name] for k in keys]
                conn.execute(sa.update(table).where(*match).values(serialization=JSON_FORMAT, **values))
                converted += 1
    return converted, left


def _value(text: str | None) -> str | None:
    return None if text is None else _to_json(plain_unpickle(text))


def _inputs(text: str | None) -> str | None:
    """DBOS's pickled `{"args": (...), "kwargs": {...}}` as its portable form."""
    if text is None:
        return None
    inputs = plain_unpickle(text)
    if not isinstance(inputs, dict) or not isinstance(inputs.get("args"), (tuple, list)):
        raise ValueError("workflow inputs are not DBOS's {args, kwargs}")
    return _to_json({"positionalArgs": list(inputs["args"]), "namedArgs": inputs.get("kwargs") or {}})


def _error(text: str | None) -> str | None:
    """A pickled exception is never unpickled (building it means calling its class): it becomes
    a portable error saying so."""
    if text is None:
        return None
    return _to_json({"name": "Exception", "message": NOT_READ})
