"""Two `escalate worker` processes on one PostgreSQL database (a real server, real processes,
SIGKILL): a decision heard by both continues its run exactly once, and a worker of another host
killed while holding runs leaves them to the other, which learns it from the advisory lock its
listening connection held (no pid to look up across hosts)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.workers.procs import WorkerProcess, answer_directly, audit
from tests.workers.test_workers import queue_runs, wait_until, waiting_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def steps_env(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The workers' environment: their steps audited, and parked 0.2 s after they ask (the tests
    wait for every run to park, round after round: not 2 s of grace each time)."""
    steps = tmp_path / "steps.jsonl"
    return steps, {**os.environ, "ESCALATE_STEP_AUDIT": str(steps), "ESCALATE_PARK_AFTER": "0.2"}


def continued(workers: list[WorkerProcess]) -> Counter[str]:
    """How many times each run was continued from the queue, over all the workers' logs."""
    counts: Counter[str] = Counter()
    for worker in workers:
        counts.update(re.findall(r"^(\S+): continued ", worker.text, re.MULTILINE))
    return counts


def test_two_workers_hear_each_decision_and_continue_its_run_exactly_once(tmp_path: Path, pg_url: str) -> None:
    steps, env = steps_env(tmp_path)
    workers = [WorkerProcess(pg_url, tmp_path, concurrency=2, name=f"w{i}", env=env) for i in range(2)]
    db = Database(pg_url)
    try:
        for worker in workers:
            worker.wait_ready()
        ids = queue_runs(tmp_path, pg_url, 6)
        for round_ in (1, 2):  # each run asks twice: its agent, then its flow
            wait_until(lambda: waiting_runs(db) == set(ids), timeout=180, what=f"all six parked at question {round_}")
            for row in db.pending_escalations():  # all at once: both workers hear every decision
                assert answer_directly(db, row)
            wait_until(lambda: sum(continued(workers).values()) == round_ * len(ids), timeout=180,
                       what=f"each run continued after decision {round_}")
        wait_until(lambda: all(db.get_run(i)["status"] == "done" for i in ids), what="every run done")
        assert continued(workers) == Counter({run_id: 2 for run_id in ids})
        report = audit(db, steps)
        assert (report.done, report.escalations, report.lost, report.doubled, report.misrouted) == (6, 12, 0, 0, 0), report
        assert (tmp_path / "ran.txt").read_text().split() == ["ran"] * 6  # each command once
        assert [w.stop() for w in workers] == [0, 0]
    finally:
        for worker in workers:
            worker.kill()
        db.close()


class ElsewhereWorker(WorkerProcess):
    """`escalate worker` under another host name, so that no other process can look its pid up (a
    worker on another machine, as far as owners go): in a UTS namespace of its own where the
    kernel gives one, else (a container without namespaces: CI's may be one) with the name
    changed in Python before escalate starts, where escalate reads it (engine/durable/owners.py,
    socket.gethostname)."""

    def __init__(self, db_url: str, cwd: Path, *, concurrency: int, env: dict[str, str]) -> None:
        self.log = cwd / "elsewhere.err"
        self._err = self.log.open("w")
        host = f"elsewhere-{os.getpid()}"
        worker = ["-m", "engine", "worker", "--db", db_url, "--concurrency", str(concurrency)]
        if _can_unshare():
            command = [*_UNSHARE, "sh", "-c", f"hostname {host} && exec {shlex.join([sys.executable, *worker])}"]
        else:
            command = [sys.executable, "-c", _RENAMED_HOST, host, *worker[1:]]
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=self._err)


_UNSHARE = ["unshare", "--uts"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--uts"]

# argv: the host name, then `engine worker ...`, run as `python -m` runs it.
_RENAMED_HOST = ("import runpy, socket, sys; host = sys.argv[1]; socket.gethostname = lambda: host; "
                 "sys.argv = sys.argv[2:]; runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")


@functools.cache
def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*_UNSHARE, "hostname", "x"], capture_output=True).returncode == 0


def test_a_worker_of_another_host_killed_holding_runs_leaves_them_to_the_other(tmp_path: Path, pg_url: str) -> None:
    steps, env = steps_env(tmp_path)
    ids = queue_runs(tmp_path, pg_url, 3)  # queued first: the far worker takes all three at once
    # The far worker's grace is an hour: its runs wait in it, holding their places, when it dies,
    # however far apart they came to wait (with 2 s, the first parked before a loaded host's third asked).
    far = ElsewhereWorker(pg_url, tmp_path, concurrency=3, env={**env, "ESCALATE_PARK_AFTER": "3600"})
    near: WorkerProcess | None = None
    db = Database(pg_url)
    try:
        far.wait_ready()
        assert not far.owner.startswith(os.uname().nodename + "-")
        # Each run waits for a person in its grace, holding its place in the far worker.
        wait_until(lambda: {r["run_id"] for r in db.list_runs() if r["status"] == "waiting" and r["owner"] == far.owner}
                   == set(ids), what="the far worker holding the three waiting runs")
        far.kill()
        near = WorkerProcess(pg_url, tmp_path, concurrency=3, name="near", env=env).wait_ready()
        wait_until(lambda: all(f"{i}: taken over from {far.owner}" in near.text for i in ids), timeout=60,
                   what="the near worker taking the three runs over")
        for round_ in (1, 2):
            wait_until(lambda: waiting_runs(db) == set(ids), timeout=120, what=f"all three parked at question {round_}")
            for row in db.pending_escalations():
                assert answer_directly(db, row)
        wait_until(lambda: all(db.get_run(i)["status"] == "done" for i in ids), what="every run done")
        report = audit(db, steps)
        assert (report.done, report.escalations, report.lost, report.doubled, report.misrouted) == (3, 6, 0, 0, 0), report
        assert near.stop() == 0
    finally:
        far.kill()
        if near is not None:
            near.kill()
        db.close()
