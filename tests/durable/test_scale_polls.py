"""What a worker's polls cost as runs pile up (issue 26: 10,000 runs waiting on people at once).

Counted, not timed: SQLite's virtual-machine instructions for each query a worker runs every
second (or at each raise), on a real file holding N and then 2N parked runs, each with its
pending escalation, beside N runs queued for a place. A query that reads per row doubles at
most; one that reads per pair of rows (each parked run probing every pending escalation)
quadruples; one that reads only what it returns stays flat.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import sqlalchemy as sa

from engine.durable import parking
from engine.durable.database import PARKED, QUEUED, Database

N = 300


def _run(run_id: str, status: str) -> dict[str, Any]:
    return dict(run_id=run_id, task="wait", workflow="flow", path="/x.sr", flow=None, input="go", script=None,
                rules=None, workspace="/", status=status, started=time.time(), owner=None, heartbeat=None)


def _pending(run_id: str, deadline: float | None) -> dict[str, Any]:
    payload = {"escalation": {"id": f"{run_id}.2", "task_id": "wait", "run_id": run_id, "agent": "asker",
                              "reason": "architecture_decision", "question": "Keep?", "context": "", "options": [],
                              "allow_agent_decision": False, "timeout": None, "origin": "agent_text",
                              "created_at": time.time()},
               "policy": {"deadline": deadline, "on_timeout": "wait", "option_id": None, "timeout_seconds": None},
               "extra": {}}
    return dict(id=f"{run_id}.2", run_id=run_id, created=time.time(), deadline=deadline, payload=json.dumps(payload),
                status="pending", digest="d")


def _add(db: Database, start: int, count: int) -> None:
    """`count` parked runs waiting on a person (a far deadline), and `count` queued ones."""
    parked = [f"rp{n:06d}" for n in range(start, start + count)]
    queued = [f"rq{n:06d}" for n in range(start, start + count)]
    db.import_history([_run(r, PARKED) for r in parked] + [_run(r, QUEUED) for r in queued],
                      [_pending(r, time.time() + 86_400) for r in parked])


def _instructions(db: Database, query: Callable[[], Any]) -> int:
    """SQLite VM instructions `query` makes (SQLite's progress handler, called at each)."""
    counted = [0]

    def count() -> int:
        counted[0] += 1
        return 0

    def arm(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        conn.connection.driver_connection.set_progress_handler(count, 1)

    sa.event.listen(db.engine, "before_cursor_execute", arm)
    try:
        query()
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", arm)
    return counted[0]


POLLS: dict[str, Callable[[Database], Any]] = {
    "ready": parking.ready,  # every second: parked runs with nothing pending
    "news": lambda db: parking.ready(db, ["rp000003.2", "rp000004.2"]),  # each decision heard: its runs only
    "overdue": parking.overdue,  # every second: deadlines passed with no process timing them
    "stuck": parking.stuck,  # every second: claims never queued
    "queued": lambda db: parking.queued(db, 9),  # at each raise: is a place wanted
    "active": lambda db: db.list_runs(parked=False, queued=False),  # every second: the takeover scan
    "beat": lambda db: db.beat("nobody"),  # every 2 s: this process's runs are alive
}
# per row of what it must look at, at most (2: doubles with the rows), or flat (1.3)
GROWTH = {"ready": 2.4, "news": 1.3, "overdue": 1.3, "stuck": 1.3, "queued": 1.3, "active": 1.3, "beat": 1.3}


@pytest.mark.parametrize("poll", sorted(POLLS))
def test_a_worker_poll_reads_per_row_at_most_never_per_pair(tmp_path: Path, poll: str) -> None:
    db = Database(f"sqlite:///{tmp_path / 'escalate.db'}")
    try:
        _add(db, 0, N)
        small = _instructions(db, lambda: POLLS[poll](db))
        _add(db, N, N)
        large = _instructions(db, lambda: POLLS[poll](db))
        assert small > 0
        assert large <= GROWTH[poll] * small + 100, (poll, small, large)
    finally:
        db.close()


def test_ready_finds_exactly_the_parked_runs_left_with_nothing_pending(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'escalate.db'}")
    try:
        _add(db, 0, 20)
        with db.engine.begin() as c:  # five decided, one withdrawn: six runs ready to continue
            c.exec_driver_sql("UPDATE escalate_escalations SET status='decided' WHERE run_id IN "
                              "('rp000001','rp000003','rp000005','rp000007','rp000009')")
            c.exec_driver_sql("UPDATE escalate_escalations SET status='withdrawn' WHERE run_id='rp000011'")
        assert sorted(parking.ready(db)) == ["rp000001", "rp000003", "rp000005", "rp000007", "rp000009", "rp000011"]
        assert parking.ready(db, ["rp000003.2", "rp000004.2"]) == ["rp000003"]
        assert parking.ready(db, ["nothing.2", "rp000003.2", "rp000003.2", "rp000011.2"]) in (["rp000003", "rp000011"],
                                                                                            ["rp000011", "rp000003"])
        assert parking.ready(db, ["rq000003.2"]) == []  # no such escalation: a queued run's id
        assert parking.still_waits(db, "rp000004") and not parking.still_waits(db, "rp000003")
        assert parking.queued(db, 5) == 5 and parking.queued(db, 100) == 20 and parking.queued(db, 0) == 0
    finally:
        db.close()
