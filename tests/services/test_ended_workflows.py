"""A run that is over while DBOS still holds its workflow `PENDING`: its process was killed
between the run's end (escalate's rows written, its result and events) and DBOS recording the
workflow's `SUCCESS` (found once by `bench_durable.py --kills` in 515 SIGKILLs). The window is
made exactly: a run goes to its end in a real `escalate run` process, which then no longer
exists, and its DBOS row is put back as that process left it had it been killed a moment
earlier (`PENDING`, its executor). A real `escalate worker` then finishes the workflow, and a
workflow resumed anyway (as DBOS's recovery or anyone's `resume_workflow` would) is never
executed again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from engine.durable.database import Database
from engine.durable.host import WORKERS_QUEUE
from tests.workers.procs import WorkerProcess

pytestmark = pytest.mark.timeout(300)

FLOW = '''streetrace v1

prompt work: """You do the work."""

agent worker:
    instruction work

flow main:
    $a = run agent worker $input
    return $a
'''


def _dbos(db: Database, run_id: str) -> tuple[str, str]:
    with db.engine.connect() as c:
        row = c.execute(sa.text("SELECT status, executor_id FROM workflow_status WHERE workflow_uuid = :i"),
                        {"i": run_id}).one()
    return row[0], row[1]


def _ended_run_left_pending(tmp_path: Path) -> tuple[str, Database, str, dict[str, Any], int]:
    """A run done by an `escalate run` process that is gone now, its workflow back to PENDING."""
    (tmp_path / "flow.sr").write_text(FLOW)
    (tmp_path / "script.yaml").write_text('agents:\n  worker:\n    - "all done"\n')
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    done = subprocess.run([sys.executable, "-m", "engine", "run", "flow.sr", "--script", "script.yaml", "--input", "go",
                           "--db", url], cwd=tmp_path, env=os.environ.copy(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    db = Database(url)
    (row,) = db.list_runs(include_finished=True)
    run_id = row["run_id"]
    status, executor = _dbos(db, run_id)
    assert status == "SUCCESS" and executor
    with db.engine.begin() as c:  # as it was before DBOS's SUCCESS: the process killed in between
        c.execute(sa.text("UPDATE workflow_status SET status = 'PENDING', output = NULL WHERE workflow_uuid = :i"),
                  {"i": run_id})
    assert row["status"] == "done"
    return url, db, run_id, row, len(db.events_of(run_id))


def _wait_status(db: Database, run_id: str, *, not_: str, worker: WorkerProcess, timeout: float = 90.0) -> str:
    end = time.monotonic() + timeout
    while (status := _dbos(db, run_id)[0]) == not_:
        assert time.monotonic() < end, (status, worker.text[-2000:])
        assert worker.proc.poll() is None, worker.text[-2000:]
        time.sleep(0.1)
    return status


def test_a_worker_finishes_the_pending_workflow_of_a_run_that_is_over(tmp_path: Path) -> None:
    url, db, run_id, row, events = _ended_run_left_pending(tmp_path)
    worker = WorkerProcess(url, tmp_path, concurrency=1).wait_ready()
    try:
        # Before: nobody ever looked at it (the takeover scans runs not over): PENDING for good.
        assert _wait_status(db, run_id, not_="PENDING", worker=worker) == "CANCELLED"
        after = db.get_run(run_id)
        assert (after["status"], after["finished"], after["result"]) == ("done", row["finished"], row["result"])
        assert len(db.events_of(run_id)) == events
    finally:
        assert worker.stop() == 0
        db.close()


def test_a_pending_workflow_of_a_run_that_is_over_resumed_anyway_is_not_executed_again(tmp_path: Path) -> None:
    from dbos import DBOSClient

    url, db, run_id, row, events = _ended_run_left_pending(tmp_path)
    client = DBOSClient(system_database_url=url)
    try:  # what DBOS's recovery of that executor, or anyone's resume, does: back on a queue
        client.resume_workflow(run_id, queue_name=WORKERS_QUEUE)
    finally:
        client.destroy()
    worker = WorkerProcess(url, tmp_path, concurrency=1).wait_ready()
    try:
        # Before: the worker executed the run again from its recorded steps and ended it again.
        assert _wait_status(db, run_id, not_="ENQUEUED", worker=worker) in ("PENDING", "SUCCESS")
        assert _wait_status(db, run_id, not_="PENDING", worker=worker) == "SUCCESS"
        after = db.get_run(run_id)
        assert (after["status"], after["finished"], after["result"]) == ("done", row["finished"], row["result"])
        assert len(db.events_of(run_id)) == events
        assert f"{run_id}: done" not in worker.text
    finally:
        assert worker.stop() == 0
        db.close()
