"""What a durable turn costs the database (issue 26): a step is one transaction of escalate's, with
the run's events; DBOS writes its workflow rows on an engine with WAL and `synchronous=NORMAL`
(its own engine synced the WAL at every commit); a turn's events and its token count wait for the
writer's batch, the run's next step or its row change instead of a transaction each.
Counted, not timed: statements per thread on a real SQLite file, a real durable run."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.durable import database, loop_write
from engine.durable.database import Database
from engine.services import open_services

TURNS = 12
FLOW = """
prompt p: \"\"\"Repeat what you are given.\"\"\"
agent echo:
    instruction p
flow main:
    $x = $input
    loop max {n} do
        $x = run agent echo $x
    end
    return $x
"""


LOOP_WRITER = "the loop writer"  # the pool named for statements of loop_write.py's connection


class Statements:
    """Every statement run on any engine of this process: (thread name, engine's pool, SQL);
    and those of the steps' loop writer (engine/durable/loop_write.py), its pool LOOP_WRITER."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object, str]] = []
        self._connect = loop_write.sqlite3.connect

    def __enter__(self) -> "Statements":
        sa.event.listen(sa.engine.Engine, "before_cursor_execute", self._one)
        loop_write.sqlite3 = _Traced(self)  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", self._one)
        loop_write.sqlite3 = sqlite3

    def _one(self, conn, cursor, statement, params, context, executemany) -> None:  # noqa: ANN001
        self.seen.append((threading.current_thread().name, conn.engine.pool, " ".join(statement.split())))

    def loop_writer_connect(self, *args: object, **kwargs: object) -> sqlite3.Connection:
        conn = self._connect(*args, **kwargs)
        conn.set_trace_callback(
            lambda sql: self.seen.append((threading.current_thread().name, LOOP_WRITER, " ".join(sql.split()))))
        return conn


class _Traced:
    """sqlite3 as loop_write.py sees it, its connections traced."""

    def __init__(self, statements: Statements) -> None:
        self.connect = statements.loop_writer_connect

    def __getattr__(self, name: str) -> object:
        return getattr(sqlite3, name)


async def _durable_run(tmp_path: Path) -> tuple[object, object]:
    """A run of TURNS scripted turns, durable on a SQLite file; returns (its handle, services)."""
    from engine.runtime.engine import RunStatus
    from engine.runtime.script import parse_script
    from rules.loader import default_rules

    (tmp_path / "turns.sr").write_text(FLOW.format(n=TURNS))
    script = parse_script("agents:\n  echo:\n" + "".join(f"    - 'reply {i}'\n" for i in range(TURNS)))
    services = await open_services(f"sqlite:///{tmp_path / 'turns.db'}", identity="test")
    engine = services.engine(default_rules(), workspace=tmp_path, script=script)
    handle = engine.start_run(engine.load(tmp_path / "turns.sr"), input="go")
    assert await handle.wait() is RunStatus.DONE, handle.error
    return handle, services


async def test_a_step_is_one_transaction_of_ours_with_the_run_s_events(tmp_path, monkeypatch) -> None:
    # Each model turn: one INSERT into escalate_steps, after the run's events queued before it, in
    # one transaction; a new run's recorded steps not read (none); nothing through
    # DBOS's step recording (before: 2 SELECTs, then an UPDATE and an INSERT into DBOS's
    # operation_outputs, two transactions a step).
    monkeypatch.setattr(database, "EVENTS_LINGER", 600.0, raising=False)
    with Statements() as statements:
        handle, services = await _durable_run(tmp_path)
    try:
        ours = services.db.engine
        assert not [sql for _, _, sql in statements.seen if sql.startswith("INSERT INTO main.operation_outputs")]
        loads = [sql for _, _, sql in statements.seen if sql.startswith("SELECT") and " FROM escalate_steps " in sql]
        # a run started here has nothing recorded: no read at all (before: one at its first step;
        # a continued run reads once: test_steps_table.py)
        assert loads == []
        by_thread: dict[str, list[str]] = {}
        for thread, pool, sql in statements.seen:
            if pool is ours.pool or pool == LOOP_WRITER:
                by_thread.setdefault(thread, []).append(sql.split(" (")[0])
        recorded = [(thread, i) for thread, seen in by_thread.items() for i, sql in enumerate(seen)
                    if sql.startswith("INSERT INTO escalate_steps")]
        assert len(recorded) == TURNS
        # the statement before each step's INSERT: the run's events (the turn's prompt, its
        # agent_start), in its transaction
        assert all(by_thread[thread][i - 1].startswith("INSERT INTO escalate_events") for thread, i in recorded)
        with services.db.engine.connect() as c:
            names = c.exec_driver_sql("SELECT name FROM escalate_steps WHERE run_id = ? ORDER BY step",
                                      (handle.id,)).scalars().all()
        assert names == ["model turn"] * TURNS
    finally:
        services.close()


async def test_dbos_writes_on_an_engine_with_wal_and_synchronous_normal(tmp_path) -> None:
    handle, services = await _durable_run(tmp_path)
    try:
        ours = services.db.dbos_engine()
        assert ours is not None
        with ours.connect() as c:
            raw = c.connection.dbapi_connection
            assert raw.isolation_level == "IMMEDIATE"  # DBOS's own setting, kept
            assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL (FULL is 2)
            assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert c.exec_driver_sql("SELECT count(*) FROM workflow_status WHERE workflow_uuid = ?",
                                     (handle.id,)).scalar() == 1  # DBOS still owns the workflow
    finally:
        services.close()


async def test_a_turn_s_events_take_no_transaction_of_their_own(tmp_path, monkeypatch) -> None:
    # The writer lingers longer than the run: every event reaches the database with the run's
    # end, in that transaction (before: the writer wrote ~2 transactions a turn).
    monkeypatch.setattr(database, "EVENTS_LINGER", 600.0, raising=False)
    with Statements() as statements:
        handle, services = await _durable_run(tmp_path)
        try:
            stored = services.db.events_of(handle.id)
        finally:
            services.close()
    assert [sql for thread, _, sql in statements.seen if thread == "escalate-events"] == []
    assert [e["type"] for e in stored] == [e.type for e in handle.events]
    assert len(stored) > TURNS


def test_a_token_count_is_written_with_the_batch_not_by_the_caller(tmp_path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'tokens.db'}")
    try:
        with Statements() as statements:
            db.set_tokens("r1", 10)
            db.set_tokens("r1", 25)
            db.set_tokens("r2", 7)
            mine = [sql for thread, _, sql in statements.seen if thread == threading.current_thread().name]
        assert mine == []  # a model turn waits for no database write (before: an UPDATE and an INSERT)
        assert db.tokens_of(["r1", "r2"]) == {"r1": 25, "r2": 7}
        db.set_tokens("r1", 40)
        db.create_run(run_id="r1", task="t", workflow="w", path="/w.sr", input="", workspace="/",
                      status="running", started=1.0)
        db.update_run("r1", status="done", finished=2.0)  # its count is written with its row
    finally:
        db.close()
    again = Database(f"sqlite:///{tmp_path / 'tokens.db'}")
    try:
        assert again.tokens_of(["r1", "r2"]) == {"r1": 40, "r2": 7}
    finally:
        again.close()


async def test_a_host_left_open_on_a_database_now_gone_does_not_stop_the_next_one(tmp_path) -> None:
    # Seen in the suite: a PostgreSQL test's host left open, its server stopped; every later
    # open in that process failed in closing it (`release`), whatever database it was for.
    from tests.pg_server import serving

    servers = serving()
    server = next(servers)
    try:
        await open_services(server.new_database(), identity="test")  # left open
    finally:
        servers.close()  # the server stopped
    handle, services = await _durable_run(tmp_path)
    services.close()
    assert handle.result is not None


async def test_a_run_started_here_is_not_read_back_before_it_executes(tmp_path) -> None:
    # Its row was just written here as running: the workflow's check that a recovered run is not
    # over (host.py `over`) is not made for it (before: a hop to a thread and the row read, a start).
    with Statements() as statements:
        handle, services = await _durable_run(tmp_path)
    services.close()
    assert [sql for _, _, sql in statements.seen if "FROM escalate_runs" in sql] == []


async def test_a_live_turn_goes_on_with_the_model_s_own_response(tmp_path, monkeypatch) -> None:
    # Before: a durable turn recorded the response's JSON and went on with a response rebuilt from
    # it (`LlmResponse.model_validate`, ~180 Python calls a turn), live too; now the model's own
    # response goes on live, as in memory, and only a replayed turn is rebuilt (test_crash*).
    from google.adk.models import LlmResponse

    rebuilt: list[int] = []
    model_validate = LlmResponse.model_validate.__func__

    def counted(cls, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        rebuilt.append(1)
        return model_validate(cls, *args, **kwargs)

    monkeypatch.setattr(LlmResponse, "model_validate", classmethod(counted))
    handle, services = await _durable_run(tmp_path)
    try:
        assert handle.result == f"reply {TURNS - 1}"
        assert rebuilt == [], f"{len(rebuilt)} responses rebuilt from their JSON over {TURNS} live turns"
    finally:
        services.close()
