"""Escalate's SQLite writes wait for the write lock in short, even steps (engine/durable/
sqlite_wait.py) instead of SQLite's busy handler, whose sleeps grow to 100 ms and let writers
that came later win the lock first: a write that opens its transaction is tried again from the
start, and nothing else changes (a write after a read keeps the busy handler; past the wait,
SQLite's own error)."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.durable import sqlite_wait
from engine.durable.database import Database, runs


def _row(run_id: str) -> dict:
    return {"run_id": run_id, "task": "t", "workflow": "w", "path": "w.sr", "input": "", "workspace": ".",
            "status": "waiting", "started": 1.0}


def _hold_lock(path: Path, seconds: float) -> tuple[threading.Thread, threading.Event]:
    """Another connection holds the write lock for `seconds` (set: taken)."""
    taken = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        taken.set()
        time.sleep(seconds)
        other.execute("COMMIT")
        other.close()

    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait(10)
    return thread, taken


def _traced(c: sa.Connection) -> list[str]:
    seen: list[str] = []
    c.connection.dbapi_connection.set_trace_callback(seen.append)  # type: ignore[union-attr]
    return seen


def test_a_write_that_opens_its_transaction_is_tried_again_until_it_gets_the_lock(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        db.create_run(**_row("r1"))
        holder, _ = _hold_lock(tmp_path / "e.db", 0.3)
        with db.engine.connect() as c:
            seen = _traced(c)
            c.execute(runs.update().where(runs.c.run_id == "r1").values(heartbeat=2.0))
            c.commit()
        holder.join()
        tries = [s for s in seen if s.startswith("UPDATE")]
        assert len(tries) >= 2, seen  # SQLite's busy handler: one statement, its waits inside
        assert seen.count("ROLLBACK") == len(tries) - 1
        assert db.get_run("r1")["heartbeat"] == 2.0
    finally:
        db.close()


def test_a_write_after_a_read_keeps_sqlite_s_busy_handler(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        db.create_run(**_row("r1"))
        with db.engine.connect() as c:
            seen = _traced(c)
            c.exec_driver_sql("BEGIN")
            c.execute(sa.select(runs.c.run_id))
            holder, _ = _hold_lock(tmp_path / "e.db", 0.2)
            with pytest.raises(sa.exc.OperationalError):  # SQLite does not wait to upgrade a read: as before
                c.execute(runs.update().where(runs.c.run_id == "r1").values(heartbeat=3.0))
            c.rollback()
            holder.join()
        assert sum(s.startswith("UPDATE") for s in seen) == 1  # not tried again
    finally:
        db.close()


def test_past_the_wait_sqlite_s_own_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_wait, "WAIT_AT_MOST", 0.05)
    db = Database(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        db.create_run(**_row("r1"))
        holder, _ = _hold_lock(tmp_path / "e.db", 0.5)
        with pytest.raises(sa.exc.OperationalError, match="locked"):
            with db.engine.begin() as c:
                c.execute(runs.update().where(runs.c.run_id == "r1").values(heartbeat=4.0))
        holder.join()
        db.beat("nobody")  # the connection works again, with its usual busy wait
        assert db.get_run("r1")["heartbeat"] is None
    finally:
        db.close()
