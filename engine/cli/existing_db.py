"""The database of a command that only reads or decides (`runs`, `answer`, `resume`): it must
exist already. Opening it would otherwise create an empty one at a mistyped `--db` path and the
command would answer "no runs" about the wrong file."""

from __future__ import annotations

from typing import Any


def open_existing(given: str | None) -> Any:
    """The Database at `given` (or $ESCALATE_DB, or the default); raises DatabaseError, one
    line, when it is a SQLite file that does not exist."""
    from engine.durable.database import Database, DatabaseError, resolve_url
    from engine.durable.urls import sqlite_path

    url = resolve_url(given)
    path = sqlite_path(url)
    if path is not None and not path.is_file():
        raise DatabaseError(f"{path}: no such database (nothing has run with it; a command that starts runs creates it)")
    return Database(url)
