"""Escalate's tables have a schema version (issue 23): a database written by an older escalate
(the committed one made by 4fad3c6, or one of main before versions) is upgraded in place to
CURRENT; a database of a newer escalate is refused in one line and left as it was; processes
opening a new or an old database at the same moment all succeed, on SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.durable.database import Database, DatabaseError, metadata
from engine.durable.migrations import CURRENT, VERSION_TABLE
from tests.cli_here import escalate_here

MADE_BY_OLD = Path(__file__).parent / "data" / "made-by-4fad3c6.db"  # see data/README.md
OLD_RUN = "rf083a5c3"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'escalate.db'}"
    return request.getfixturevalue("pg_url")


def old_copy(tmp_path: Path) -> str:
    db_file = tmp_path / "old.db"
    shutil.copyfile(MADE_BY_OLD, db_file)
    return f"sqlite:///{db_file}"


def version_of(url: str) -> int | None:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as c:
            if VERSION_TABLE not in sa.inspect(c).get_table_names():
                return None
            return c.execute(sa.text(f"SELECT version FROM {VERSION_TABLE}")).scalar_one()
    finally:
        engine.dispose()


def columns(url: str) -> dict[str, list[str]]:
    """Escalate's tables and their columns, as the database has them."""
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        inspector = sa.inspect(engine)
        return {name: sorted(col["name"] for col in inspector.get_columns(name))
                for name in inspector.get_table_names() if name.startswith("escalate_")}
    finally:
        engine.dispose()


def execute(url: str, *statements: str) -> None:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as c:
            for statement in statements:
                c.execute(sa.text(statement))
    finally:
        engine.dispose()


def as_main_before_versions(url: str, *, digest: bool) -> None:
    """Make a database just created the way an escalate before versions left it: no version
    table; without `digest` (version 1: 4fad3c6) or with it (version 2: main at de2d2d5)."""
    Database(url).close()
    execute(url, f"DROP TABLE {VERSION_TABLE}",
            *([] if digest else ["ALTER TABLE escalate_escalations DROP COLUMN digest"]))


def test_the_database_made_by_4fad3c6_is_upgraded_in_place(tmp_path) -> None:
    url = old_copy(tmp_path)
    before = columns(url)
    assert version_of(url) is None and "digest" not in before["escalate_escalations"]
    with closing(sqlite3.connect(tmp_path / "old.db")) as conn:
        rows_before = conn.execute("SELECT id, status, payload FROM escalate_escalations ORDER BY id").fetchall()
    Database(url).close()
    assert version_of(url) == CURRENT
    fresh = tmp_path / "fresh.db"
    Database(f"sqlite:///{fresh}").close()
    assert columns(url) == columns(f"sqlite:///{fresh}")  # the migrations lead to today's tables
    assert "digest" in columns(url)["escalate_escalations"]
    db = Database(url)
    try:
        assert db.get_run(OLD_RUN)["status"] == "waiting"
        (pending,) = db.pending_escalations([OLD_RUN])
        assert pending["digest"] is None  # raised before digests: decided as before
    finally:
        db.close()
    with closing(sqlite3.connect(tmp_path / "old.db")) as conn:
        rows_after = conn.execute("SELECT id, status, payload FROM escalate_escalations ORDER BY id").fetchall()
    assert rows_after == rows_before


@pytest.mark.parametrize("digest, version", [(False, 1), (True, 2)])
def test_a_database_without_a_version_is_read_from_its_columns(db_url, digest, version) -> None:
    as_main_before_versions(db_url, digest=digest)
    if version == 2:  # had it been taken for version 1, adding the column again would fail
        execute(db_url, "INSERT INTO escalate_escalations (id, run_id, created, payload, status, digest) "
                        "VALUES ('r1.1', 'r1', 1.0, '{}', 'pending', 'abc')")
    Database(db_url).close()
    assert version_of(db_url) == CURRENT
    assert "digest" in columns(db_url)["escalate_escalations"]


def test_a_database_of_a_newer_escalate_is_refused_and_left_as_it_was(db_url) -> None:
    Database(db_url).close()
    execute(db_url, f"UPDATE {VERSION_TABLE} SET version = {CURRENT + 1}",
            "DROP INDEX ix_escalate_escalations_status")  # a newer escalate's schema: never "repaired"
    before = columns(db_url)
    with pytest.raises(DatabaseError) as refused:
        Database(db_url)
    line = str(refused.value)
    assert "\n" not in line and f"schema version {CURRENT + 1}" in line and "newer escalate" in line
    for command in (["runs"], ["answer", "r1.1", "--approve"]):
        done = escalate_here(*command, "--db", db_url, cwd=Path.cwd())  # what it says and returns: read here
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "newer escalate" in done.stderr, done.stderr
    assert version_of(db_url) == CURRENT + 1 and columns(db_url) == before
    engine = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        indexes = {i["name"] for i in sa.inspect(engine).get_indexes("escalate_escalations")}
        assert "ix_escalate_escalations_status" not in indexes
    finally:
        engine.dispose()


@pytest.mark.parametrize("held", ["text", "two rows", "none"])
def test_a_version_row_that_is_not_a_version_is_named(tmp_path, held) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    Database(url).close()
    execute(url, *{"text": [f"UPDATE {VERSION_TABLE} SET version = 'two'"],
                   "two rows": [f"INSERT INTO {VERSION_TABLE} VALUES (1)"],
                   "none": [f"DELETE FROM {VERSION_TABLE}"]}[held])
    with pytest.raises(DatabaseError) as refused:
        Database(url)
    assert "\n" not in str(refused.value) and f"{VERSION_TABLE}: holds" in str(refused.value)


OPEN = """
import sys, time
from pathlib import Path
from engine.durable.database import Database
ready, go = Path(sys.argv[2]), Path(sys.argv[3])
ready.touch()
while not go.exists():
    time.sleep(0.001)
Database(sys.argv[1]).close()
"""


def open_at_once(url: str, folder: Path, processes: int = 3) -> None:
    """`processes` interpreters open `url` at the same moment (each ready, then all told to go)."""
    go = folder / "go"
    ready = [folder / f"ready-{i}" for i in range(processes)]
    procs = [subprocess.Popen([sys.executable, "-c", OPEN, url, str(r), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in ready]
    try:
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


@pytest.mark.parametrize("start", ["new", "version 1"])
def test_processes_opening_a_new_or_old_database_at_once_all_succeed(db_url, tmp_path, start) -> None:
    if start == "version 1":
        as_main_before_versions(db_url, digest=False)
    open_at_once(db_url, tmp_path)
    assert version_of(db_url) == CURRENT
    assert set(columns(db_url)) == {t.name for t in metadata.sorted_tables} | {VERSION_TABLE}
    assert "digest" in columns(db_url)["escalate_escalations"]


def test_processes_opening_the_database_made_by_4fad3c6_at_once_all_succeed(tmp_path) -> None:
    url = old_copy(tmp_path)
    open_at_once(url, tmp_path)
    assert version_of(url) == CURRENT and "digest" in columns(url)["escalate_escalations"]


# The tables and indexes of each version, as `metadata` declares them. A database whose version
# row says CURRENT is not inspected at open (one query: engine/durable/migrations.py), so a table
# or index added to `metadata` must come with a new version and its migration: add both here.
SCHEMA = {
    3: {"escalate_agent_history": [], "escalate_events": [], "escalate_imports": [], "escalate_run_tokens": [],
        "escalate_steps": [], "escalate_runs": ["ix_escalate_runs_status_owner"],
        "escalate_escalations": ["ix_escalate_escalations_run_id", "ix_escalate_escalations_run_status",
                                 "ix_escalate_escalations_status", "ix_escalate_escalations_status_deadline"]},
}


def test_the_schema_of_the_current_version_is_pinned() -> None:
    declared = {table.name: sorted(index.name for index in table.indexes) for table in metadata.sorted_tables}
    assert declared == SCHEMA[CURRENT], "a table or index added: a new version and its migration"


def test_a_database_at_the_current_version_is_checked_with_one_query(db_url) -> None:
    """Opening a database already at CURRENT reads its version row and nothing else (the
    catalog's inspection was 9 statements on SQLite, one per table's indexes)."""
    from engine.durable.migrations import prepare

    Database(db_url).close()
    engine = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as c:
            c.execute(sa.text("SELECT 1"))  # the dialect's own first-connection queries, before counting
        said: list[str] = []
        sa.event.listen(engine, "before_cursor_execute", lambda _c, _cur, statement, *_rest: said.append(statement))
        prepare(engine, metadata)
    finally:
        engine.dispose()
    assert len(said) == 1 and VERSION_TABLE in said[0], said
