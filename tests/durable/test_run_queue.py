"""`escalate run` starts its own run and resumes none: it registers no DBOS queue of its own
(engine/durable/host.py, `resumes`). A registered queue is a DBOS thread polling the database
ten times a second for the process's whole life (a `run --wait` waiting for a person) and a
row of DBOS's `queues` table left behind by every process. `escalate resume` still registers
its queue, continues the run through it, and deletes it once the run is back (its poll ends)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_here import escalate_here

DEMO = Path(__file__).parents[2] / "engine" / "demo"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def escalate(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *argv, "--db", f"sqlite:///{cwd / 'e.db'}"], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def own_queues(cwd: Path) -> list[str]:
    with sqlite3.connect(cwd / "e.db") as c:
        return [name for (name,) in c.execute("SELECT name FROM queues") if name.startswith("escalate-") and name != "escalate-runs"]


def test_run_registers_no_queue_of_its_own_and_resume_does(tmp_path: Path) -> None:
    first = escalate(tmp_path, "run", str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"),
                     "--input", "Fix login")
    assert first.returncode == 4, first.stderr  # waiting for a person
    assert own_queues(tmp_path) == []  # before: one row per `run` process, and its poll thread while it lived
    run_id = first.stderr.splitlines()[0].removeprefix("run ")
    with sqlite3.connect(tmp_path / "e.db") as c:
        (esc_id,) = c.execute("SELECT id FROM escalate_escalations WHERE status = 'pending'").fetchone()
    answered = escalate_here("answer", esc_id, "--option", "jwt", "--db", f"sqlite:///{tmp_path / 'e.db'}", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr  # given in this process: the run and resume are the processes
    resumed = escalate(tmp_path, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("Plan: move auth to JWT")
    assert own_queues(tmp_path) == []  # `resume` took its run back through its own queue, then deleted it


async def test_a_resuming_process_s_queue_is_there_when_dbos_launches(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """DBOS's queue thread lists the queues at launch, then once a second: a queue registered
    after the launch was first polled ~1 s later, and `resume` waited that long for its run."""
    from engine.durable.host import DurableHost
    from engine.services import open_services

    url = f"sqlite:///{tmp_path / 'e.db'}"
    (await open_services(url, identity="first")).close()  # DBOS has set the database up
    seen: list[list[str]] = []
    launch = DurableHost._launch

    def watched(host: DurableHost, shared: list[str]) -> None:
        seen.append(own_queues(tmp_path))
        launch(host, shared)

    monkeypatch.setattr(DurableHost, "_launch", watched)
    services = await open_services(url, identity="escalate resume")
    try:
        assert len(seen) == 1 and services.host.queue_name in seen[0]  # before: registered after the launch
    finally:
        services.close()
