"""The version of escalate's own tables and the steps from each version to the next (DBOS
migrates its own tables itself).

`escalate_schema` holds one row, the version. A database made before it existed is read from
its columns: version 1 is the schema of commit 4fad3c6, version 2 adds `digest` to
`escalate_escalations`, version 3 the table `escalate_steps`. Opening a database reads the version
row, one query: it is written in the transaction that creates or upgrades the tables, so a row
saying CURRENT means nothing is to do (a table or index added to `metadata` therefore comes with a
new version and its migration: tests/durable/test_migrations.py pins the schema of CURRENT).
Otherwise it checks the version and what is missing of the tables (from the catalog: no lock)
and, only when something is to do, does it all in one transaction,
one process at a time: on PostgreSQL under an advisory lock (waited for at most the connection's
`lock_timeout`), on SQLite under BEGIN IMMEDIATE. Whoever comes second finds the work done.
A database of a newer version is refused, untouched. Why not Alembic: docs/durable.md.
"""

from __future__ import annotations

import itertools
import time
from typing import Callable

import sqlalchemy as sa

from engine.durable.urls import DatabaseError

VERSION_TABLE = "escalate_schema"
_ESCALATIONS = "escalate_escalations"
# PostgreSQL: the key that makes creating or upgrading the tables one process at a time (IF NOT
# EXISTS races on the catalog). Taken only when something is to do: any role that may connect can hold it.
CREATE_LOCK_KEY = 8117008514
CREATE_ATTEMPTS = 100  # x 50 ms: setting up a new SQLite file beside other processes

_version = sa.Table(
    VERSION_TABLE, sa.MetaData(),
    sa.Column("version", sa.Integer, nullable=False),
)


def _add_digest(c: sa.Connection) -> None:
    """1 -> 2: escalation_digest of the payload as raised. Rows raised before keep none, and
    are decided as before."""
    c.execute(sa.text(f"ALTER TABLE {_ESCALATIONS} ADD COLUMN digest VARCHAR(64)"))


def _add_steps(c: sa.Connection) -> None:
    """2 -> 3: escalate records a run's steps in a table of its own (engine/durable/steps.py).
    Steps recorded before stay in DBOS's `operation_outputs`, where a replay reads them too: none
    is copied (DBOS's table may not exist yet, and its pickle rows are converted, or refused, only
    when DBOS is launched)."""
    c.execute(sa.text("CREATE TABLE IF NOT EXISTS escalate_steps (run_id VARCHAR(64) NOT NULL, step INTEGER NOT NULL, "
                      "name TEXT NOT NULL, result TEXT, error TEXT, PRIMARY KEY (run_id, step))"))


# MIGRATIONS[i] takes version i + 1 to i + 2. Each is written against the tables as they were
# then (plain SQL, never the current `metadata`), and runs once, in the transaction that records
# the version it reaches. A new one: append it, and its test in tests/durable/test_migrations.py.
MIGRATIONS: tuple[Callable[[sa.Connection], None], ...] = (_add_digest, _add_steps)
CURRENT = 1 + len(MIGRATIONS)


def prepare(engine: sa.Engine, metadata: sa.MetaData) -> None:
    """Bring the database to CURRENT: migrate what exists, then create what is missing of
    `metadata` (tables, then indexes). Nothing is locked or written when nothing is to do.
    Raises DatabaseError (one line) for a database of a newer escalate, unchanged."""
    for attempt in itertools.count():
        try:
            with engine.connect() as c:
                if not _to_do(c, metadata):
                    return
            with engine.connect() as c:
                _lock(c)
                version, recorded = _read_version(c, sa.inspect(c))
                _refuse_newer(version)
                for step in MIGRATIONS[(version or CURRENT) - 1:]:
                    step(c)
                _create_missing(c, metadata)
                if version != CURRENT or not recorded:
                    c.execute(_version.delete())
                    c.execute(_version.insert().values(version=CURRENT))
                c.commit()
            return
        except sa.exc.OperationalError as exc:
            # SQLite: seen once with two workers starting together on a new file (one of them
            # creating DBOS's tables meanwhile): "database is locked" although the other
            # writer's transaction was short. It can only start again.
            if engine.dialect.name != "sqlite" or "locked" not in str(exc) or attempt >= CREATE_ATTEMPTS:
                raise
            time.sleep(0.05)


def _to_do(c: sa.Connection, metadata: sa.MetaData) -> bool:
    if _at_current(c):
        return False
    inspector = sa.inspect(c)
    version, recorded = _read_version(c, inspector)
    _refuse_newer(version)
    return version != CURRENT or not recorded or bool(_missing(inspector, metadata))


def _at_current(c: sa.Connection) -> bool:
    """Whether the version row says CURRENT: one query, where the catalog's inspection took 9
    statements on SQLite (a table list, then each table's indexes) and a dozen reflection
    queries on PostgreSQL."""
    try:
        rows = c.execute(sa.select(_version.c.version)).all()
    except sa.exc.DBAPIError:  # no version table yet: a new database, or one made before versions
        c.rollback()  # PostgreSQL: the failed statement ended the transaction
        return False
    return len(rows) == 1 and type(rows[0][0]) is int and rows[0][0] == CURRENT


def _lock(c: sa.Connection) -> None:
    """Begin the transaction that migrates, holding the database's write lock from its start."""
    if c.dialect.name == "postgresql":
        c.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": CREATE_LOCK_KEY})
    else:
        # pysqlite begins a transaction lazily, before the first write: a transaction that read
        # first is refused, without waiting, when another process wrote meanwhile. IMMEDIATE
        # takes the write lock at once (waiting busy_timeout), and the reads see the last write.
        c.exec_driver_sql("BEGIN IMMEDIATE")


def _read_version(c: sa.Connection, inspector: sa.Inspector) -> tuple[int | None, bool]:
    """The database's version, and whether VERSION_TABLE records it (else it is read from the
    columns: a database made before versions); None when escalate's tables are not there yet."""
    tables = set(inspector.get_table_names())
    if VERSION_TABLE in tables:
        rows = c.execute(sa.select(_version.c.version)).all()
        if len(rows) != 1 or not isinstance(rows[0][0], int) or isinstance(rows[0][0], bool) or rows[0][0] < 1:
            shown = ", ".join(repr(row[0]) for row in rows[:3])[:100] or "no row"
            raise DatabaseError(f"{VERSION_TABLE}: holds {shown}, not one schema version; nothing was changed")
        return int(rows[0][0]), True
    if _ESCALATIONS not in tables:
        return None, False
    return (2 if "digest" in {col["name"] for col in inspector.get_columns(_ESCALATIONS)} else 1), False


def _refuse_newer(version: int | None) -> None:
    if version is not None and version > CURRENT:
        raise DatabaseError(f"written by a newer escalate (schema version {version}; this one knows up to "
                            f"{CURRENT}): use that escalate or a newer one; nothing was changed")


def _create_missing(c: sa.Connection, metadata: sa.MetaData) -> None:
    from sqlalchemy.schema import CreateIndex, CreateTable

    inspector = sa.inspect(c)  # a new one: the migrations changed what an older one saw
    missing = _missing(inspector, metadata)
    if VERSION_TABLE not in inspector.get_table_names():
        missing.insert(0, _version)
    for item in missing:
        c.execute(CreateTable(item, if_not_exists=True) if isinstance(item, sa.Table)
                  else CreateIndex(item, if_not_exists=True))


def _missing(inspector: sa.Inspector, metadata: sa.MetaData) -> list[sa.Table | sa.Index]:
    """The tables and indexes of `metadata` that the database lacks, tables first (read from
    the catalog: no lock on any table)."""
    present = set(inspector.get_table_names())
    missing: list[sa.Table | sa.Index] = [t for t in metadata.sorted_tables if t.name not in present]
    for table in metadata.sorted_tables:
        if table.indexes:
            named = {i["name"] for i in inspector.get_indexes(table.name)} if table.name in present else set()
            missing.extend(i for i in table.indexes if i.name not in named)
    return missing
