"""Two real consoles (each `escalate console` in a pseudo-terminal) on one PostgreSQL database with
a worker running the run: both show the escalation the worker raised, both answer it at once,
one answer wins and the other console is told it ended without it; the next escalation shows in
both, and a decision made from the shell removes it from both."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.e2e.pty_console import PtyConsole
from tests.cli_here import escalate_here
from tests.workers.procs import WorkerProcess
from tests.workers.test_workers import queue_runs, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_two_consoles_answer_the_same_escalation_and_one_wins(tmp_path: Path, pg_url: str) -> None:
    worker = WorkerProcess(pg_url, tmp_path, concurrency=2)
    consoles: list[PtyConsole] = []
    db = Database(pg_url)
    try:
        worker.wait_ready()
        consoles = [PtyConsole(tmp_path, "--db", pg_url) for _ in range(2)]
        (run_id,) = queue_runs(tmp_path, pg_url, 1)
        for console in consoles:
            console.wait_for(b"Keep the old API?")
        (first,) = db.pending_escalations()
        marks = [len(c.output) for c in consoles]
        for console in consoles:
            console.type("1")  # both at once: option [1]
        wait_until(lambda: db.get_escalation(first["id"])["status"] == "decided", what="the first decision")
        for console in consoles:  # the run went on in the worker: its next question shows in both
            console.wait_for(b"Ship built?")
        told = [b"ended without you" in bytes(c.output[mark:]) for c, mark in zip(consoles, marks)]
        assert told.count(True) == 1, told  # the console whose answer lost was told
        decisions = [e for e in db.events_of(run_id) if e["type"] == "decision"]
        assert [d["id"] for d in decisions] == [first["id"]] and decisions[0]["selectedOption"] == "keep"

        (second,) = db.pending_escalations()
        marks = [len(c.output) for c in consoles]
        answered = escalate_here("answer", second["id"], "--text", "ship it", "--db", pg_url, cwd=tmp_path)  # another process than the consoles
        assert answered.returncode == 0, answered.stderr
        for console, mark in zip(consoles, marks):  # gone from both consoles, who decided shown
            end = time.monotonic() + 60
            while b"ended without you" not in bytes(console.output[mark:]):
                assert time.monotonic() < end, bytes(console.output[-2000:])
                time.sleep(0.05)
        wait_until(lambda: db.get_run(run_id)["status"] == "done", what="the run done")
        assert db.get_run(run_id)["result"] == '"built | ship it"'
    finally:
        for console in consoles:
            console.close()
        worker.kill()
        db.close()
