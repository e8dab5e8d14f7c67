"""History lives in the database: a `--store` file is imported once, earlier sessions' decisions,
runs and hand-offs are read back (the history screen, metrics and seed 002 success rates), and
several processes writing one database at once leave it whole."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.kernel.clock import RealClock
from tests.store.store_helpers import agent_line, line, raised_line, resolved_line
from tests.tui.helpers import make_session

DEMO = Path(__file__).parents[2] / "engine" / "demo"


def a_store(path: Path) -> None:
    """A store an earlier console wrote: one decided escalation, one withdrawn, one hand-off."""
    path.write_text(raised_line("esc-1", "Use JWT?") + resolved_line("esc-1", "jwt") + raised_line("esc-2", "Other?")
                    + line("withdrawn", "2025-11-22T04:00:05.000Z", id="esc-2") + agent_line("locator", "analyzer"))


async def test_a_store_is_imported_once_and_read_back_as_earlier_history(tmp_path) -> None:
    store = tmp_path / "history.jsonl"
    a_store(store)
    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    first = make_session([], clock=RealClock(), db_url=db_url, store=store)
    await first.open_database()
    try:
        assert first.imported == (2, 0)
        assert [(r.state, r.earlier) for r in first.earlier] == [("decided", True), ("withdrawn", True)]
        assert first.earlier[0].decision.response.selected_option == "jwt"
        first.open_engine()
        assert [(e.source, e.target) for e in first.agent_history.entries_since(0)] == [("locator", "analyzer")]
    finally:
        first.host.close()
    again = make_session([], clock=RealClock(), db_url=db_url, store=store)
    await again.open_database()
    try:
        assert again.imported is None  # once only
        assert len(again.earlier) == 2
    finally:
        again.host.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_concurrent_processes_on_one_database_leave_it_whole(tmp_path) -> None:
    """Two `run --wait` processes, answered from a third, while a fourth lists: all finish, the
    database reads back whole (with the JSON-lines store, two consoles broke the next start)."""
    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    base = [sys.executable, "-m", "engine"]
    runs = [subprocess.Popen([*base, "run", str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"),
                              "--input", f"Fix login {n}", "--db", db_url, "--wait"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(2)]
    answered: set[str] = set()
    deadline = time.monotonic() + 120
    try:
        while len(answered) < 2 and time.monotonic() < deadline:
            if not (tmp_path / "escalate.db").exists():  # `runs` refuses a database no run has made yet
                time.sleep(0.05)
                continue
            listed = json.loads(subprocess.run([*base, "runs", "--db", db_url, "--format", "json"], cwd=tmp_path,
                                               capture_output=True, text=True, check=True).stdout)
            for esc in (p for run in listed for p in run["pending"]):
                if esc["id"] not in answered:
                    subprocess.run([*base, "answer", esc["id"], "--option", "jwt", "--db", db_url], cwd=tmp_path, check=True,
                                   capture_output=True)
                    answered.add(esc["id"])
        results = [p.communicate(timeout=60) for p in runs]
    finally:
        for p in runs:
            p.kill()
    assert [p.returncode for p in runs] == [0, 0], results
    listed = json.loads(subprocess.run([*base, "runs", "--all", "--db", db_url, "--format", "json"], cwd=tmp_path,
                                       capture_output=True, text=True, check=True).stdout)
    assert sorted(r["status"] for r in listed) == ["done", "done"]
    # The sqlite3 shell is optional here (a container may have none); Python's own check below is not.
    check = subprocess.run(["sqlite3", str(tmp_path / "escalate.db"), "PRAGMA integrity_check"], capture_output=True,
                           text=True) if shutil.which("sqlite3") else None
    if check is not None and check.returncode == 0:
        assert check.stdout.strip() == "ok"
    import sqlite3

    with sqlite3.connect(tmp_path / "escalate.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
