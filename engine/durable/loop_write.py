"""A step's row (and a new run's row) written on the run's own thread (its event loop) when
SQLite's write lock is free.

A step recorded on a pool thread costs a hop from the loop and back (the work handed over, the
loop woken through its self-pipe), ~0.1 ms of CPU a step, more wall time on a busy host where
each thread waits for a core (docs/durable.md, "What a turn costs"). Most of the time the lock is
free and the transaction itself is a few rows written to the WAL (no fsync at `synchronous=NORMAL`),
so it is tried right there, on a connection of its own that never waits:

- `BEGIN IMMEDIATE` with a busy timeout of 0: the lock is taken at once or not at all. Held by
  anyone (another process, DBOS, the events writer), nothing was done and the caller writes on a
  thread as before, where waiting is harmless.
- the connection is the caller's only while a non-blocking lock is held: another thread (a
  second loop in the process) finds it taken and uses the thread path.
- checkpoints stay off the loop: this connection's automatic checkpoint is off (a checkpoint
  syncs the file); every `THREAD_EVERY`-th write goes through the thread path instead, whose
  connections check the WAL's size at their commits as SQLite does by default (so do the events
  writer's, DBOS's and the heartbeat's), keeping the WAL to its usual size.

The same durability as the thread path: one transaction, WAL, `synchronous=NORMAL` (a kill -9
loses nothing committed). An error other than a busy lock rolls the transaction back; the caller
then writes on the thread path, which reports what is still wrong.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")

THREAD_EVERY = 256  # loop writes between two writes on the thread path (its connections checkpoint)


class LoopWriter:
    """One SQLite connection for writes that must never wait (see the module's text)."""

    def __init__(self, path: Path, statements: "Sequence[str]", prepare: Any) -> None:
        """`statements`: the events INSERT, the token count's upsert, the step's INSERT and the
        run's INSERT, as SQLite's driver takes them (qmark parameters); `prepare(connection)`: the
        settings every connection of the database gets (WAL, `synchronous=NORMAL`)."""
        self._path = path
        self._events_sql, self._tokens_sql, self._step_sql, self._run_sql = statements
        self._prepare = prepare
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._writes = 0

    def write(self, events: list[tuple[Any, ...]], tokens: list[tuple[str, int]],
              step: tuple[Any, ...]) -> bool | None:
        """The events, the token counts and the step's row in one transaction, now: whether the
        step's row was new (False: it was recorded already); None: nothing done (the lock was
        taken, the connection in use, or a write due on the thread path)."""
        def work(conn: sqlite3.Connection) -> bool:
            if events:
                conn.executemany(self._events_sql, events)
            if tokens:
                conn.executemany(self._tokens_sql, tokens)
            return conn.execute(self._step_sql, step).rowcount == 1

        return self._attempt(work)

    def create_run(self, run: tuple[Any, ...]) -> bool:
        """A new run's row, now: False when nothing was done (as `write`'s None; an error, a run
        id taken say, is then the thread path's to report)."""
        def work(conn: sqlite3.Connection) -> bool:
            conn.execute(self._run_sql, run)
            return True

        return self._attempt(work) is True

    def _attempt(self, work: Callable[[sqlite3.Connection], T]) -> T | None:
        """`work(connection)` in one transaction that took the write lock at once; None when it
        could not (the lock or the connection taken, a write due on the thread path, an error:
        rolled back)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            self._writes += 1
            if self._writes % THREAD_EVERY == 0:
                return None
            try:
                conn = self._connection()
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error:  # locked or busy (another writer holds it), or not to be opened here
                return None
            try:
                done = work(conn)
                conn.execute("COMMIT")
            except sqlite3.Error:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                return None
            return done
        finally:
            self._lock.release()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            # Autocommit mode: the transaction is the explicit BEGIN IMMEDIATE ... COMMIT above.
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            self._prepare(conn)
            conn.execute("PRAGMA busy_timeout=0")
            conn.execute("PRAGMA wal_autocheckpoint=0")
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
