"""engine/services: the one place that opens the database, DBOS's host, the decision store and
the broker, and makes Engines (issue 23). Real SQLite files, a real workflow, real processes."""

from __future__ import annotations

import ast
import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.durable.database import ACTIVE
from engine.durable.urls import DatabaseError
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import RealClock
from engine.services import Services, open_database, open_services

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "runtime" / "data"
WIRING = "engine/services/wiring.py"


def _calls(predicate) -> set[str]:
    """The source files of engine/ and tui/ with a call matching `predicate(call node)`."""
    found = set()
    for folder in ("engine", "tui"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(node, ast.Call) and predicate(node.func) for node in ast.walk(tree)):
                found.add(path.relative_to(ROOT).as_posix())
    return found


def test_only_the_services_open_dbos_and_make_engines() -> None:
    # Before: run_cmd.open_engine, durable/worker.py and tui/session.py each opened the host and made Engines.
    opens_host = _calls(lambda f: isinstance(f, ast.Attribute) and f.attr == "open"
                        and isinstance(f.value, ast.Name) and f.value.id == "DurableHost")
    makes_engine = _calls(lambda f: isinstance(f, ast.Name) and f.id == "Engine")
    assert opens_host == {WIRING}
    # engine.runtime.engine's warm_up makes one in memory (no database) to load ADK early.
    assert makes_engine == {WIRING, "engine/runtime/engine.py"}


async def test_a_durable_run_waits_in_the_database_after_close(tmp_path) -> None:
    from engine.runtime.script import load_script
    from rules import load_rules

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    services = await open_services(url, identity="escalate run")
    try:
        assert services.host is not None and services.store is not None and services.broker.store is services.store
        assert services.broker.identity.endswith("via escalate run")
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(DATA / "decide.yaml"))
        assert (engine.db, engine.host, engine.broker) == (services.db, services.host, services.broker)
        handle = engine.start_run(engine.load(DATA / "decide.sr"), input="auth")

        async def asked() -> None:
            while not services.broker.pending():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(asked(), 120)  # a hang guard, not a timing
    finally:
        services.close()
    assert handle.detached  # left as it is, not ended
    db = open_database(url, existing=True)
    try:
        assert db.get_run(handle.id)["status"] in ACTIVE
        assert [row["run_id"] for row in db.pending_escalations()] == [handle.id]
    finally:
        db.close()


async def test_the_console_s_broker_is_kept_and_given_the_store(tmp_path) -> None:
    broker = EscalationBroker(RealClock())
    seen: list[object] = []
    broker.subscribe(seen.append)
    db = open_database(f"sqlite:///{tmp_path / 'c.db'}")
    services = await open_services(db, identity="console", broker=broker, hear_everything=True)
    try:
        assert services.broker is broker and services.db is db and services.clock is broker.clock
        assert broker.store is services.store and broker.identity.endswith("via console")
    finally:
        services.close()


async def test_a_bad_database_is_one_line_and_nothing_is_opened(tmp_path) -> None:
    with pytest.raises(DatabaseError, match=r"^mysql://x: not a database URL"):
        await open_services("mysql://x", identity="escalate run")
    missing = tmp_path / "typo.db"
    with pytest.raises(DatabaseError, match="no such database"):
        open_database(f"sqlite:///{missing}", existing=True)
    assert not missing.exists()  # a command that only reads never creates one


def test_in_memory_services_close_leaves_nothing_to_do() -> None:
    services = Services(EscalationBroker(RealClock()), RealClock())
    services.close()
    assert services.db is None and services.host is None


def test_runs_imports_neither_dbos_nor_adk(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    open_database(url).close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "engine", "runs", "--db", url],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    modules = set(re.findall(r"^import time:.*\|\s*(\S+)$", done.stderr, re.M))
    assert "engine.services.database" in modules
    assert not {m for m in modules if m.split(".")[0] == "dbos" or m.startswith("google.adk")}
