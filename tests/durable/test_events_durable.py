"""Events are as durable as the steps (issue 22, finding 12): a run's row never says more than
its event log holds. A process queues a burst of a run's events, records the run's end and is
killed (SIGKILL) at once: every event before the end is in the database. (The crash harness's
kills while runs finish: tests/durable/test_crash.py.)"""

from __future__ import annotations

import signal
import subprocess
import sys

from engine.durable.database import Database

EVENTS = 2000
PAD = "x" * 2000  # a few MB of events in all: writing them takes longer than recording the end

CHILD = """
import os, signal, sys, time
from engine.durable.database import Database
db, run = Database(sys.argv[1]), sys.argv[2]
db.create_run(run_id=run, task="t", workflow="w", path="/w.sr", input="", workspace="/", status="running", started=time.time())
for seq in range(1, {events} + 1):
    db.add_event(run, seq, "log", "2026-01-01T00:00:00.000Z", {{"message": "line %d" % seq, "pad": "{pad}"}})
db.update_run(run, status="done", finished=time.time())
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_run_recorded_as_ended_has_every_event_before_its_end(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    runs = ["r1", "r2", "r3"]
    for run in runs:
        done = subprocess.run([sys.executable, "-c", CHILD.format(events=EVENTS, pad=PAD), url, run],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == -signal.SIGKILL, done.stderr
    db = Database(url)
    try:
        for run in runs:
            assert db.get_run(run)["status"] == "done"
            kept = [e["message"] for e in db.events_of(run)]
            assert kept == [f"line {n}" for n in range(1, EVENTS + 1)], f"{run}: {len(kept)} events of {EVENTS}"
    finally:
        db.close()
