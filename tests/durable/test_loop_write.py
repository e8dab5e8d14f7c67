"""A step's row written on the run's loop when SQLite's write lock is free (issue 26): no hop to
a thread and back; never a wait on the loop (a held lock sends the write to a thread); the WAL
checkpointed off the loop. Real SQLite files, a real durable run, counted, not timed."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading

import pytest
import sqlalchemy as sa

from engine.durable import database, loop_write
from engine.durable.database import Database
from engine.services import open_services
from tests.durable.test_turn_cost import FLOW, LOOP_WRITER, TURNS, Statements, _durable_run


async def test_a_durable_turn_records_its_step_on_the_loop_with_its_events(tmp_path, monkeypatch) -> None:
    # Before: every step's INSERT on a pool thread (one hop from the loop and back a turn).
    monkeypatch.setattr(database, "EVENTS_LINGER", 600.0)  # the run's events all go with its steps
    tried: list[object] = []  # what each step's try on the loop gave (None: the lock was held)
    record_step_now = Database.record_step_now

    def traced(db: Database, row: dict[str, object]) -> bool | None:
        tried.append(record_step_now(db, row))
        return tried[-1]

    monkeypatch.setattr(Database, "record_step_now", traced)
    create_run_now = Database.create_run_now
    run_now: list[bool] = []
    monkeypatch.setattr(Database, "create_run_now", lambda db, **row: run_now.append(create_run_now(db, **row)) or run_now[-1])
    loop_thread = threading.current_thread().name
    with Statements() as statements:
        handle, services = await _durable_run(tmp_path)
    services.close()
    # A step that found the lock held (DBOS writing the workflow's row on its thread, once in a
    # while under CI's load at the first step) went to the thread path, as designed; each other
    # step was written on the loop.
    held = tried.count(None)
    assert len(tried) == TURNS and held <= TURNS // 3, tried
    steps = [(thread, pool) for thread, pool, sql in statements.seen if sql.startswith("INSERT INTO escalate_steps")]
    assert [step for step, got in zip(steps, tried) if got is not None] == [(loop_thread, LOOP_WRITER)] * (TURNS - held)
    assert all(pool != LOOP_WRITER for (thread, pool), got in zip(steps, tried) if got is None)
    mine = [sql for thread, pool, sql in statements.seen if pool == LOOP_WRITER and not sql.startswith("PRAGMA")]
    # each: one transaction that takes the lock at once, the run's queued events, the step; and
    # the first, the run's row (start_run on the loop when the lock was free)
    assert len(run_now) == 1 and mine.count("COMMIT") == TURNS - held + run_now[0]
    assert mine[1].startswith("INSERT INTO escalate_runs") == run_now[0]
    assert all(mine[i - 1].startswith("INSERT INTO escalate_events")
               for i, sql in enumerate(mine) if sql.startswith("INSERT INTO escalate_steps"))


def _step(run_id: str, number: int) -> dict[str, object]:
    return {"run_id": run_id, "step": number, "name": "model turn", "result": json.dumps([number]), "error": None}


def _stored(db: Database, run_id: str) -> tuple[list[int], list[int]]:
    with db.engine.connect() as c:
        steps = c.exec_driver_sql("SELECT step FROM escalate_steps WHERE run_id = ? ORDER BY step", (run_id,)).scalars().all()
        events = c.exec_driver_sql("SELECT seq FROM escalate_events WHERE run_id = ? ORDER BY seq", (run_id,)).scalars().all()
    return list(steps), list(events)


def test_a_held_lock_is_not_waited_for_the_events_stay_queued(tmp_path) -> None:
    path = tmp_path / "held.db"
    db = Database(f"sqlite:///{path}")
    other = sqlite3.connect(path, isolation_level=None)  # another process's writer, say
    try:
        db.add_event("r1", 1, "log", "t", {"message": "before the step"})
        other.execute("BEGIN IMMEDIATE")
        assert db.record_step_now(_step("r1", 1)) is None  # not waited for (the busy timeout would be 10 s)
        other.execute("COMMIT")
        assert _stored(db, "r1") == ([], [])  # nothing half-written
        assert db.record_step_now(_step("r1", 1)) is True  # free: written, the event with it
        assert _stored(db, "r1") == ([1], [1])
        assert db.record_step_now(_step("r1", 1)) is False  # recorded already: the first kept
    finally:
        other.close()
        db.close()


def test_the_events_writer_s_batch_in_flight_is_not_waited_for(tmp_path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'batch.db'}")
    try:
        with db._events_write:  # what the events writer holds while it writes a batch
            assert db.record_step_now(_step("r1", 1)) is None
        assert db.record_step_now(_step("r1", 1)) is True
    finally:
        db.close()


def test_the_wal_is_checkpointed_off_the_loop(tmp_path, monkeypatch) -> None:
    # The loop writer never checkpoints (a checkpoint syncs the file); every THREAD_EVERY-th
    # write goes to a thread's connection, which does, so the WAL keeps its usual size.
    monkeypatch.setattr(loop_write, "THREAD_EVERY", 16)
    monkeypatch.setattr(database, "EVENTS_LINGER", 600.0)  # the events writer's commits checkpoint too
    path = tmp_path / "wal.db"
    db = Database(f"sqlite:///{path}")
    on_thread = 0
    try:
        for number in range(1, 1601):
            db.add_event("r1", number, "log", "t", {"message": "x" * 2000})  # about a page a write
            row = _step("r1", number)
            if db.record_step_now(row) is None:
                on_thread += 1
                db.with_events("r1", lambda c: c.exec_driver_sql(
                    "INSERT INTO escalate_steps (run_id, step, name, result, error) VALUES (?, ?, ?, ?, ?)",
                    tuple(row.values())))
        wal_pages = (path.parent / (path.name + "-wal")).stat().st_size // 4096
        # 1,600 writes of 2-3 pages each without a checkpoint; SQLite's 1,000 pages with one
        assert wal_pages < 1600
        assert on_thread == 1600 // 16
        assert _stored(db, "r1") == (list(range(1, 1601)), list(range(1, 1601)))
    finally:
        db.close()


def test_a_write_that_fails_halfway_leaves_nothing_and_is_left_to_the_thread_path(tmp_path) -> None:
    # Hostile or broken: a trigger (another user's) refuses the step's row after the run's events
    # went in. The loop's transaction is rolled back, nothing is half-written, the events stay
    # queued, nothing is raised on the loop's side; the thread path then reports it.
    path = tmp_path / "refused.db"
    db = Database(f"sqlite:///{path}")
    try:
        with db.engine.begin() as c:
            c.exec_driver_sql("CREATE TRIGGER refuse BEFORE INSERT ON escalate_steps BEGIN SELECT RAISE(ABORT, 'refused'); END")
        db.add_event("r1", 1, "log", "t", {"message": "kept"})
        assert db.record_step_now(_step("r1", 1)) is None
        assert _stored(db, "r1") == ([], [])
        with pytest.raises(sa.exc.IntegrityError, match="refused"):
            db.with_events("r1", lambda c: c.exec_driver_sql(
                "INSERT INTO escalate_steps (run_id, step, name) VALUES ('r1', 1, 'model turn')"))
        with db.engine.begin() as c:
            c.exec_driver_sql("DROP TRIGGER refuse")
        assert db.record_step_now(_step("r1", 1)) is True
        assert _stored(db, "r1") == ([1], [1])
    finally:
        db.close()


HOLD = 1.0  # seconds another connection holds SQLite's write lock


async def test_a_start_while_another_connection_holds_the_lock_does_not_stall_the_loop(tmp_path) -> None:
    # Before: start_run wrote the run's row on the loop, waiting for the lock in 1 ms steps
    # (sqlite_wait.py): the loop stood still as long as the lock was held (a console frozen
    # during a burst of starts). Now the row is written on the loop only if the lock is free, else
    # on a thread; the run starts once it is released.
    from engine.runtime.engine import RunStatus
    from engine.runtime.script import parse_script
    from rules.loader import default_rules

    (tmp_path / "turns.sr").write_text(FLOW.format(n=2))
    script = parse_script("agents:\n  echo:\n    - 'one'\n    - 'two'\n")
    path = tmp_path / "held.db"
    services = await open_services(f"sqlite:///{path}", identity="test")
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)  # another process's writer, say
    try:
        engine = services.engine(default_rules(), workspace=tmp_path, script=script)
        workflow = engine.load(tmp_path / "turns.sr")
        loop = asyncio.get_running_loop()
        late: list[float] = []
        released = threading.Event()

        def tick(due: float) -> None:  # how late each 10 ms callback runs: the loop's stalls
            late.append(loop.time() - due)
            if not released.is_set():
                loop.call_at(due + 0.01, tick, due + 0.01)

        other.execute("BEGIN IMMEDIATE")

        def release() -> None:
            released.set()
            other.execute("COMMIT")

        timer = threading.Timer(HOLD, release)
        timer.start()
        loop.call_soon(tick, loop.time())
        handle = engine.start_run(workflow, input="go")
        await asyncio.to_thread(released.wait)
        timer.join()
        assert max(late) < HOLD / 2, f"the loop stood still {max(late):.3f} s while the lock was held"
        assert await handle.wait() is RunStatus.DONE, handle.error
        assert services.db.get_run(handle.id)["status"] == "done"
    finally:
        other.close()
        services.close()


def test_a_run_s_row_is_written_now_only_when_the_lock_is_free(tmp_path) -> None:
    path = tmp_path / "runs.db"
    db = Database(f"sqlite:///{path}")
    other = sqlite3.connect(path, isolation_level=None)
    row = dict(run_id="r1", task="t", workflow="w", path="/w.sr", workspace="/ws", status="running",
               started=1.0, owner="me", heartbeat=1.0)
    try:
        other.execute("BEGIN IMMEDIATE")
        assert db.create_run_now(**row) is False  # not waited for
        other.execute("COMMIT")
        assert db.get_run("r1") is None  # nothing written
        assert db.create_run_now(**row) is True
        got = db.get_run("r1")
        assert got is not None and (got["path"], got["input"], got["flow"]) == ("/w.sr", "", None)  # as create_run stores it
        assert db.create_run_now(**row) is False  # its id taken: left to create_run, which says so
    finally:
        other.close()
        db.close()
