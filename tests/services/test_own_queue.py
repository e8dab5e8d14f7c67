"""A process's own DBOS queue (engine/durable/host.py): the runs it takes back are put there so
that DBOS hands them to it. It polls the database ten times a second while it exists, so it is
deleted once nothing waits on it and at a clean stop, and registered again at the next run taken
back; a run left queued on a queue nobody serves any more is taken over like any run of a
process that stopped. Real `escalate run`, `escalate answer` and `escalate worker` processes on
a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.durable.database import Database
from engine.services import open_services
from tests.cli_here import escalate_here
from tests.workers.procs import WorkerProcess

pytestmark = pytest.mark.timeout(300)

FLOW = '''streetrace v1

flow main:
    $ship = escalate to human "Ship " + $input + "?"
    return "shipped: " + $ship
'''


def _queues(db: Database) -> set[str]:
    with db.engine.connect() as c:
        return set(c.execute(sa.text("SELECT name FROM queues")).scalars())


def _escalate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=tmp_path, env=os.environ.copy(),
                          capture_output=True, text=True, timeout=120)


def _run_to_its_question(tmp_path: Path, url: str, name: str) -> str:
    """`escalate run` of FLOW, which stops at its question (exit 4: released, for anyone to continue)."""
    done = _escalate(tmp_path, "run", "flow.sr", "--input", name, "--db", url)
    assert done.returncode == 4, done.stderr
    db = Database(url)
    try:
        return next(r["run_id"] for r in db.list_runs() if r["input"] == name)
    finally:
        db.close()


def _until(what, timeout: float = 120.0, why=lambda: ""):
    end = time.monotonic() + timeout
    while not (found := what()):
        assert time.monotonic() < end, why()
        time.sleep(0.1)
    return found


def test_a_run_queued_where_nobody_serves_is_taken_over_and_an_idle_worker_keeps_no_queue(tmp_path: Path) -> None:
    from dbos import DBOSClient

    (tmp_path / "flow.sr").write_text(FLOW)
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    stranded = _run_to_its_question(tmp_path, url, "stranded")
    db = Database(url)
    gone_owner = db.get_run(stranded)["owner"]
    client = DBOSClient(system_database_url=url)
    try:  # as a process that took it back and stopped before DBOS handed it over: its queue deleted
        client.resume_workflow(stranded, queue_name=f"escalate-{gone_owner}")
    finally:
        client.destroy()
    assert f"escalate-{gone_owner}" not in _queues(db)
    worker = WorkerProcess(url, tmp_path, concurrency=2).wait_ready()
    why = lambda: worker.text[-2000:]  # noqa: E731
    try:
        mine = f"escalate-{worker.owner}"
        _until(lambda: db.pending_escalations([stranded]) and db.get_run(stranded)["owner"] != gone_owner, why=why)
        _until(lambda: mine not in _queues(db), why=why)  # idle: its poller ends with its row
        later = _run_to_its_question(tmp_path, url, "later")  # released at its question: taken over here
        for run_id in (stranded, later):
            (row,) = _until(lambda: [r for r in db.pending_escalations([run_id])
                                     if db.get_run(run_id)["owner"] != gone_owner], why=why)
            assert escalate_here("answer", row["id"], "--text", "yes", "--db", url, cwd=tmp_path).returncode == 0  # read here
        _until(lambda: all(db.get_run(i)["status"] == "done" for i in (stranded, later)),
               why=lambda: (worker.text[-2000:], [(r["run_id"], r["status"], r["owner"]) for r in db.list_runs()]))
        assert [db.get_run(i)["result"] for i in (stranded, later)] == ['"shipped: yes"'] * 2
        assert f"{later}: taken over" in worker.text
    finally:
        assert worker.stop() == 0
    assert not {q for q in _queues(db) if q.startswith("escalate-") and q != "escalate-runs"}, _queues(db)
    db.close()


async def test_a_console_leaves_no_queue_behind(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    services = await open_services(url, identity="console", hear_everything=True)
    assert services.host is not None
    name = services.host.queue_name
    db = Database(url)
    try:
        assert name in _queues(db)  # registered before DBOS's launch: a run taken back at open starts at once
        services.close()
        assert name not in _queues(db)  # before: every console and worker left its row for good
    finally:
        db.close()
