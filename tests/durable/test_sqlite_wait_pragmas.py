"""engine/durable/sqlite_wait.py switches a connection's busy timeout only when it changes: a
write that opens its transaction runs with none (it is tried again every millisecond), the next
statement that may wait on SQLite's handler (a read, BEGIN) gets the 10 s wait back. Before,
every such write sent two PRAGMAs."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from engine.durable.database import Database, runs
from tests.durable.test_latency_sqlite_writes import _row


def test_back_to_back_writes_send_one_pragma_not_two_each(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        db.create_run(**_row("r1"))
        with db.engine.connect() as c:
            seen: list[str] = []
            c.connection.dbapi_connection.set_trace_callback(seen.append)  # type: ignore[union-attr]
            for beat in range(10):
                c.execute(runs.update().where(runs.c.run_id == "r1").values(heartbeat=float(beat)))
                c.commit()
        pragmas = [s for s in seen if s.startswith("PRAGMA busy_timeout")]
        assert len([s for s in seen if s.startswith("UPDATE")]) == 10
        assert len(pragmas) <= 1, seen  # before: 20 (0 before each write, 10000 after it)
        assert db.get_run("r1")["heartbeat"] == 9.0
    finally:
        db.close()


def test_a_statement_that_opens_no_write_waits_with_sqlite_s_handler_again(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'e.db'}")
    try:
        with db.engine.connect() as c:
            c.execute(runs.insert().values(**_row("r1")))  # with no busy timeout (tried here)
            c.commit()
            assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10000  # a read: the 10 s wait
            c.execute(runs.update().where(runs.c.run_id == "r1").values(heartbeat=1.0))
            c.commit()
            c.exec_driver_sql("BEGIN")
            assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 10000
            c.execute(sa.select(runs.c.run_id)).all()
            c.rollback()
    finally:
        db.close()
