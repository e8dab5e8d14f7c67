"""A run waiting on a person keeps its worker place only while nothing else wants it (issue 26).

A real `escalate worker` whose grace (`PARK_AFTER`) is an hour, so that nothing here depends on
it running out: a run that raised while the queue was empty keeps its place in its grace; a run
queued after it must not wait for that hour, the waiting one parks for it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.workers.test_workers import queue_runs, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# The worker, its grace an hour long (the only change: engine/services/parking.py's constant).
WORKER = ("import sys; import engine.services.parking as p; p.PARK_AFTER = 3600.0; "
          "from engine.cli.main import script; sys.argv = ['escalate', *sys.argv[1:]]; script()")


def _pending_of(db: Database, run_id: str) -> bool:
    return any(row["run_id"] == run_id for row in db.pending_escalations())


def test_a_run_in_its_grace_gives_its_place_to_a_run_queued_after_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    log = tmp_path / "worker.err"
    with log.open("w") as err:
        worker = subprocess.Popen([sys.executable, "-c", WORKER, "worker", "--db", url, "--concurrency", "1"],
                                  cwd=tmp_path, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=err)
    db = Database(url)
    try:
        wait_until(lambda: "taking up to" in log.read_text() or worker.poll() is not None, 120, "the worker")
        assert worker.poll() is None, log.read_text()
        (first,) = queue_runs(tmp_path, url, 1)
        wait_until(lambda: _pending_of(db, first), 120, "the first run at its question")
        assert db.get_run(first)["status"] == "waiting"  # in its grace: it keeps the one place
        (second,) = queue_runs(tmp_path, url, 1)
        wait_until(lambda: _pending_of(db, second), 120, "the second run at its question, in the first one's place")
        first_row = db.get_run(first)
        assert (first_row["status"], first_row["owner"]) == ("parked", None)
        assert db.get_run(second)["status"] == "waiting"  # nothing queued behind it: it keeps the place
    finally:
        worker.terminate()
        worker.wait(60)
        db.close()
    assert "Traceback" not in log.read_text()
