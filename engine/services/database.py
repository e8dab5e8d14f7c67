"""The database alone, for a command that only reads or decides (`runs`, `answer`, and `resume`
before it continues a run): SQLAlchemy and escalate's tables, never DBOS or ADK (the import
time of `escalate runs` stays ~0.3 s: tests/benchmarks/bench_run_start.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.durable.database import Database


def open_database(given: str | None, *, existing: bool = False) -> "Database":
    """The Database at `given` (`--db`; else $ESCALATE_DB, else .escalate/escalate.db); raises
    DatabaseError, one line. `existing`: it must exist already (a command that reads or decides:
    opening it would otherwise create an empty one at a mistyped `--db` path, and the command
    would answer "no runs" about the wrong file)."""
    from engine.durable.database import Database, DatabaseError, resolve_url
    from engine.durable.urls import sqlite_path

    url = resolve_url(given)
    path = sqlite_path(url)
    if existing and path is not None and not path.is_file():
        raise DatabaseError(f"{path}: no such database (nothing has run with it; a command that starts runs creates it)")
    return Database(url)
