"""A worker whose heartbeat is late but whose process lives (stopped, or starved on a loaded
host) keeps its run: another worker on the same host must not take it over, which would execute
one workflow in two processes at once, and so must `escalate resume` (and a console) (found by tests/durable/park_harness.py under load: the
run ended `failed`, DBOS's "awaited workflow was cancelled"). Real `escalate worker`s on a real
SQLite file, the holder stopped with SIGSTOP past the owner-silence period (STALE_AFTER, set
short here through $ESCALATE_STALE_AFTER for every process), then continued."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.durable.park_harness import Audit, ParkReport, answer_until_done
from tests.durable.test_crash_parking import _setup
from tests.workers.procs import WorkerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SILENCE = 4.0  # the shortest the setting takes (two heartbeats): 10 s by default


def test_a_live_worker_with_a_late_heartbeat_keeps_its_run(tmp_path: Path, monkeypatch) -> None:
    url, db, ids, steps = _setup(tmp_path, 1, deadline=600)
    monkeypatch.setenv("ESCALATE_STEP_AUDIT", str(steps))
    monkeypatch.setenv("ESCALATE_STALE_AFTER", str(SILENCE))  # the workers and `escalate resume` alike
    # Its runs wait in their worker, never parked: the holder is stopped while it holds the run
    # however late the test looks (a grace of 2 s could end first on a loaded host, every time).
    monkeypatch.setenv("ESCALATE_PARK_AFTER", "3600")
    workers = [WorkerProcess(url, tmp_path, concurrency=1, name=f"w{i}") for i in range(2)]
    stopped: WorkerProcess | None = None
    try:
        for worker in workers:
            worker.wait_ready()
        owners = {w.owner: w for w in workers}
        end = time.monotonic() + 300
        while stopped is None:  # the holder, while its run waits in place
            assert time.monotonic() < end, "the run was never seen waiting in its worker"
            run = db.get_run(ids[0])
            if run["status"] == "waiting" and run["owner"] in owners and db.pending_escalations(ids):
                stopped = owners[run["owner"]]
                os.kill(stopped.proc.pid, signal.SIGSTOP)
            time.sleep(0.02)
        other = next(w for w in workers if w is not stopped)
        beat = db.get_run(ids[0])["heartbeat"]
        while time.time() < beat + SILENCE + 4:  # its beat is stale now: the other scans 4 times
            time.sleep(0.2)
        assert "taken over" not in other.text, other.text
        resumed = subprocess.run([sys.executable, "-m", "engine", "resume", ids[0], "--db", url], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=120)  # nor `escalate resume`, nor a console
        assert "active in another process" in resumed.stderr, resumed.stderr
        assert db.get_run(ids[0])["owner"] == stopped.owner
        os.kill(stopped.proc.pid, signal.SIGCONT)
        answer_until_done(db, url, tmp_path, ids)
        assert [w.stop() for w in workers] == [0, 0]
        report = ParkReport(runs=1)
        Audit(db, url, report, steps).check(ids, final=True)
        assert report.problems == [] and report.clean and report.done == 1, report
    finally:
        if stopped is not None and stopped.proc.poll() is None:
            os.kill(stopped.proc.pid, signal.SIGCONT)
        for worker in workers:
            worker.kill()
        db.close()
