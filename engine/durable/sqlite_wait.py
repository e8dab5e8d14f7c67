"""How escalate's own SQLite writes wait for the write lock: in short, even steps, not with
SQLite's busy handler.

SQLite's busy handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50 then 100 ms between tries:
a writer that has waited a while sleeps longest, so with busy runs recording steps back to back
(each DBOS step record takes the lock), a decision, an escalation's row or a claim that came
late keeps losing the lock to writers that came after it (measured: a lone writer among three
busy ones, p95 121 ms with the busy handler against 35 ms trying every millisecond; README,
Speed). These writes are what a person waits on, so they try again every TRY_EVERY instead.

Only a write that begins its transaction is retried this way (pysqlite opens the transaction
at the first INSERT/UPDATE/DELETE/REPLACE): nothing was read or written in it yet, so after
SQLITE_BUSY it is rolled back and tried again from the start. A write later in a transaction
that already read (its snapshot may be stale: SQLITE_BUSY_SNAPSHOT) keeps the busy handler.

The busy timeout is switched only when it changes: 0 for the writes tried here, SQLite's wait
again before the next statement that opens no write (a read, BEGIN, DDL), which may wait on
the handler. A statement inside a transaction needs neither: it holds the write lock already,
or (a write after a read) SQLite does not call the handler for it. Each connection's timeout in
force is kept in its SQLAlchemy `info` (it lives as long as the connection): back-to-back
writes, a run's events and steps, send no PRAGMA at all (two per write before).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

TRY_EVERY = 0.001  # seconds between tries
WAIT_AT_MOST = 10.0  # as the busy handler of our connections (PRAGMA busy_timeout=10000)
_BUSY_TIMEOUT_MS = int(WAIT_AT_MOST * 1000)
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
_IN_FORCE = "escalate_busy_timeout_ms"  # the connection's busy timeout, when we changed it


def _begins_write(conn: sqlite3.Connection, statement: str) -> bool:
    return not conn.in_transaction and statement.lstrip()[:7].upper().startswith(_WRITES)


def _busy_timeout(conn: sqlite3.Connection, info: dict[str, Any], ms: int) -> None:
    """The connection's busy timeout set to `ms`, unless it is in force already (a connection
    starts with _BUSY_TIMEOUT_MS: database.py `_sqlite_pragmas`)."""
    if info.get(_IN_FORCE, _BUSY_TIMEOUT_MS) != ms:
        conn.execute(f"PRAGMA busy_timeout={ms}")
        info[_IN_FORCE] = ms


def _retrying(conn: sqlite3.Connection, info: dict[str, Any], run: Any) -> None:
    """`run()` (the statement, opening its transaction) until it gets the lock, trying every
    TRY_EVERY for up to WAIT_AT_MOST; then SQLite's own error (database is locked)."""
    _busy_timeout(conn, info, 0)
    deadline = time.monotonic() + WAIT_AT_MOST
    while True:
        try:
            run()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if conn.in_transaction:
                conn.rollback()  # the implicit BEGIN, nothing done in it
            if time.monotonic() >= deadline:
                raise
            time.sleep(TRY_EVERY)


def _run_here(cursor: Any, statement: str, context: Any, run: Any) -> bool | None:
    conn = cursor.connection
    info = context.root_connection.info  # the DBAPI connection's, for its whole life
    if _begins_write(conn, statement):
        _retrying(conn, info, run)
        return True
    if not conn.in_transaction:  # it may wait on the lock: with SQLite's busy handler, as before
        _busy_timeout(conn, info, _BUSY_TIMEOUT_MS)
    return None


def do_execute(cursor: Any, statement: str, parameters: Any, context: Any) -> bool | None:
    """SQLAlchemy's `do_execute` dialect event: True when the statement was run here."""
    return _run_here(cursor, statement, context, lambda: cursor.execute(statement, parameters))


def do_executemany(cursor: Any, statement: str, parameters: Any, context: Any) -> bool | None:
    return _run_here(cursor, statement, context, lambda: cursor.executemany(statement, parameters))
