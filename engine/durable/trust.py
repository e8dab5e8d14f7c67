"""Whose database is this: the databases the person trusts are kept in their own configuration
(engine/trusted.py).

A database escalate creates gets a marker row (a random id and this user's uid) and that id
goes into the user's configuration: a copy of the file elsewhere (a repository that ships
`.escalate/escalate.db`) carries the marker but not the trust. A database without a marker (made
before markers existed) is this user's when the file is theirs and no git repository tracks it
(SQLite), or when the connected role owns DBOS's tables (PostgreSQL); it then gets a marker. Any
other database is listed, never continued, until `escalate trust --db URL` says so.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from engine.trusted import load, update

MARKER_TABLE = "escalate_marker"
_marker = sa.Table(
    MARKER_TABLE, sa.MetaData(),
    sa.Column("slot", sa.Integer, primary_key=True),  # always 1: one marker, whoever writes first
    sa.Column("id", sa.Text, nullable=False),
    sa.Column("uid", sa.Integer),
    sa.Column("created", sa.Float),
)


# -- databases --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    trusted: bool
    reason: str  # why, for the one line the person reads
    own_rows: bool  # rows may be converted from pickle (this user wrote them)


def sqlite_file(url: str) -> Path | None:
    prefix = "sqlite:///"
    return Path(url[len(prefix):]) if url.startswith(prefix) else None


def assess(engine: sa.Engine, url: str) -> Verdict:
    """Whether this user may continue the runs of this database (see the module's docstring);
    marks a database that is new, or this user's and unmarked."""
    marker = _read_marker(engine)
    trusted = load()["databases"]
    if marker is not None:
        if marker in trusted:
            return Verdict(True, "created by you", True)
        return Verdict(False, "created by escalate for someone else, or elsewhere (a copy)", False)
    file = sqlite_file(url)
    if file is not None:
        problem = _foreign_file(file)
        if problem is not None:
            return Verdict(False, problem, False)
    elif not _owns_dbos_tables(engine):
        return Verdict(False, "DBOS's tables there belong to another database role", False)
    mark(engine, url)
    return Verdict(True, "yours (marked now)", True)


def trust_database(engine: sa.Engine, url: str) -> str:
    """`escalate trust DB`: the person says this database's runs may be continued here."""
    marker = _read_marker(engine) or mark(engine, url)
    _trust(marker, url)
    return marker


def mark(engine: sa.Engine, url: str) -> str:
    """Mark the database (two processes opening a new one together: the first marker stays, and
    both keep that one) and trust it. The marker is trusted before it is written: a process
    killed between the two leaves a database with no marker, which its next open marks again
    (this user's file); written first, it left a marked database nobody trusted ("not yours",
    its runs never continued: found by `bench_durable.py --kills`)."""
    mine = secrets.token_hex(16)
    _trust(mine, url)
    for attempt in range(3):
        try:
            with engine.begin() as conn:
                _marker.create(conn, checkfirst=True)
            break
        except sa.exc.DBAPIError:  # created by another process meanwhile (PostgreSQL's catalog race)
            if attempt == 2:
                raise
    try:
        with engine.begin() as conn:
            conn.execute(sa.insert(_marker).values(slot=1, id=mine, uid=os.getuid(), created=time.time()))
    except sa.exc.IntegrityError:
        pass  # another process marked it first
    marker = _read_marker(engine)
    assert marker is not None
    if marker != mine:  # the first marker stays: that one is trusted, ours was never used
        _trust(marker, url, instead_of=mine)
    return marker


def _trust(marker: str, url: str, instead_of: str | None = None) -> None:
    def change(data: dict[str, Any]) -> None:
        data["databases"].pop(instead_of, None)
        data["databases"][marker] = {"url": shown(url), "trusted": time.time()}

    update(change)


def _read_marker(engine: sa.Engine) -> str | None:
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(MARKER_TABLE):
            return None
        row = conn.execute(sa.select(_marker.c.id).limit(1)).first()
    return str(row[0]) if row is not None else None


def shown(url: str) -> str:
    return sa.engine.make_url(url).render_as_string(hide_password=True)


def _foreign_file(file: Path) -> str | None:
    """Why a SQLite file without a marker is not this user's own, or None."""
    try:
        owner = file.stat().st_uid
    except OSError:
        return None  # not there yet: escalate creates it
    if owner != os.getuid():
        return f"the file belongs to another user (uid {owner})"
    if _tracked_by_git(file):
        return "the file came with a git repository (tracked by git)"
    return None


def _tracked_by_git(file: Path) -> bool:
    # fsmonitor off: a repository's own configuration must not choose a program for us to run.
    command = ["git", "-c", "core.fsmonitor=false", "-C", str(file.parent), "ls-files", "--error-unmatch", "--", file.name]
    try:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=10, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return False  # no git here: nothing can say the file came with a repository
    return done.returncode == 0


def _owns_dbos_tables(engine: sa.Engine) -> bool:
    with engine.connect() as conn:
        owner = conn.execute(sa.text(
            "SELECT tableowner = current_user FROM pg_tables WHERE tablename = 'workflow_status' "
            "ORDER BY schemaname = 'dbos' DESC LIMIT 1")).scalar()
    return owner is None or bool(owner)  # no DBOS tables yet: they will be ours


