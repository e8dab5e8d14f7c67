"""Database URLs: `--db`, $ESCALATE_DB, the default. Light on purpose: the console checks its
URL before its first frame, without importing SQLAlchemy."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_RELATIVE = Path(".escalate") / "escalate.db"
ENV_VAR = "ESCALATE_DB"


class DatabaseError(Exception):
    """The database cannot be opened or used: one line naming it and why."""


def resolve_url(given: str | None = None, *, cwd: Path | None = None) -> str:
    """`--db`, else $ESCALATE_DB, else SQLite at .escalate/escalate.db under the current folder."""
    url = given or os.environ.get(ENV_VAR) or ""
    if not url:
        return "sqlite:///" + str(((cwd or Path.cwd()) / DEFAULT_RELATIVE).resolve())
    if url.startswith("sqlite:///"):
        return "sqlite:///" + str(Path(url[len("sqlite:///"):]).expanduser().resolve())
    if url.startswith(("postgresql://", "postgres://")):
        return url
    raise DatabaseError(f"{url}: not a database URL (sqlite:///PATH or postgresql://USER@HOST/DB)")


def sqlite_path(url: str) -> Path | None:
    return Path(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else None


def engine_url(url: str) -> str:
    # psycopg 3 is what DBOS installs; SQLAlchemy's plain postgresql:// means psycopg2.
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def shown(url: str) -> str:
    """A URL as it may be printed: without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        auth, host = rest.rsplit("@", 1)
        return f"{scheme}://{auth.split(':', 1)[0]}@{host}"
    return url
