"""A database is data, never code (issue 22, finding 5): a crafted pickle row in DBOS's tables
never runs, in `resume`, `worker` and the console, on SQLite and PostgreSQL; a database this user
did not create is not continued until `escalate trust`; a database written by the escalate
before JSON (pickle rows) is converted and continues."""

from __future__ import annotations

import base64
import json
import logging
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Callable

import pytest
import sqlalchemy as sa

from engine.durable import database
from engine.durable.database import Database
from tests.cli_here import escalate_here
from tests.tui.helpers import SIZE, make_app, wait_until

DEMO = Path(__file__).parents[2] / "engine" / "demo"
MADE_BY_OLD = Path(__file__).parent / "data" / "made-by-4fad3c6.db"  # see data/README.md
OLD_RUN = "rf083a5c3"  # its run, waiting on a decision
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


class _Writes:
    """Unpickling this opens (creates) `target`: what a crafted row could do, harmlessly."""

    def __init__(self, target: Path) -> None:
        self.target = str(target)

    def __reduce__(self):  # noqa: ANN204
        return (open, (self.target, "w"))


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'escalate.db'}"
    return request.getfixturevalue("postgres_server").new_database()


def escalate(cwd: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def here(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return escalate_here(*argv, cwd=cwd)


def interrupted_run(cwd: Path, db_url: str, command: Callable[..., subprocess.CompletedProcess[str]] = here) -> str:
    """A run that stopped waiting on a human (exit 4): its recorded steps stay in the database.
    Made in this process (the run's process is not what these tests are about: ~0.1 s of CPU
    where a process takes ~2 s), by `escalate` where an event loop runs here already."""
    proc = command(cwd, "run", str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"),
                   "--input", "Fix login", "--db", db_url)
    assert proc.returncode == 4, proc.stderr
    return proc.stderr.splitlines()[0].removeprefix("run ")


def _steps(conn: sa.Connection) -> sa.Table:
    schema = "dbos" if conn.dialect.name == "postgresql" else None
    return sa.Table("operation_outputs", sa.MetaData(schema=schema), autoload_with=conn)


def plant_pickle(db_url: str, run_id: str, target: Path) -> None:
    """The run's first recorded step now holds a pickle whose unpickling writes `target`: moved
    to DBOS's table, where an escalate before JSON (and before escalate_steps) recorded it."""
    db = Database(db_url)
    try:
        with db.engine.begin() as conn:
            steps = _steps(conn)
            ours = database.step_results
            first, name = conn.execute(sa.select(ours.c.step, ours.c.name).where(ours.c.run_id == run_id)
                                       .order_by(ours.c.step).limit(1)).one()
            conn.execute(ours.delete().where(ours.c.run_id == run_id, ours.c.step == first))
            crafted = base64.b64encode(pickle.dumps(_Writes(target))).decode()
            conn.execute(steps.insert().values(workflow_uuid=run_id, function_id=first, function_name=name,
                                               output=crafted, serialization="py_pickle"))
    finally:
        db.close()


def formats(db_url: str) -> set[str | None]:
    db = Database(db_url)
    try:
        with db.engine.connect() as conn:
            steps = _steps(conn)
            return {row[0] for row in conn.execute(sa.select(steps.c.serialization).distinct())}
    finally:
        db.close()


def test_resume_refuses_a_pickle_row_and_never_unpickles_it(tmp_path, db_url) -> None:
    run_id = interrupted_run(tmp_path, db_url)
    target = tmp_path / "PWNED"
    plant_pickle(db_url, run_id, target)
    proc = escalate(tmp_path, "resume", run_id, "--db", db_url)
    assert proc.returncode == 2, proc.stderr
    assert not target.exists()
    assert "Traceback" not in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "refused" in ln]
    assert run_id in line and "step" in line and "py_pickle" in line


def test_the_worker_names_a_pickle_run_and_never_takes_it(tmp_path, db_url) -> None:
    run_id = interrupted_run(tmp_path, db_url)
    target = tmp_path / "PWNED"
    plant_pickle(db_url, run_id, target)
    worker = subprocess.Popen([sys.executable, "-m", "engine", "worker", "--db", db_url], cwd=tmp_path,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stderr is not None
        lines = []
        for line in worker.stderr:  # the refusal comes before the worker's first scan
            lines.append(line)
            if "taking up to" in line:
                break
        refused = [ln for ln in lines if "refused" in ln]
        assert refused and run_id in refused[0], "".join(lines)
    finally:
        worker.send_signal(signal.SIGTERM)
        _, rest = worker.communicate(timeout=60)
    assert worker.returncode == 0, rest
    assert not target.exists()
    assert "Traceback" not in "".join(lines) + rest


async def test_the_console_lists_a_pickle_run_and_never_continues_it(tmp_path, db_url, caplog) -> None:
    from engine.kernel.clock import RealClock
    from tests.tui.helpers import make_session

    run_id = interrupted_run(tmp_path, db_url, escalate)  # `run`'s own loop cannot start in this test's
    target = tmp_path / "PWNED"
    plant_pickle(db_url, run_id, target)
    session = make_session([DEMO / "auth-refactor.sr"], clock=RealClock(), db_url=db_url, workspace=tmp_path)
    app = make_app(session, open_engine=True)
    caplog.set_level(logging.WARNING, logger="escalate.console")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(session.pending()) == 1, 60, "the waiting decision, listed")
        await wait_until(pilot, lambda: run_id in caplog.text and "refused" in caplog.text, 60, "the refusal")
        assert session.run(run_id) is None  # listed, not continued
        await pilot.press("q")
        await pilot.pause()
    assert not target.exists()


def test_dbos_never_unpickles_once_a_host_is_open(tmp_path) -> None:
    """Rows written after the scan: DBOS's own pickle reader refuses."""
    from dbos._serialization import deserialize_value

    from engine.durable.serialization import JSON_FORMAT, PickleRefused, guard_pickle, serializer

    guard_pickle()
    target = tmp_path / "PWNED"
    crafted = base64.b64encode(pickle.dumps(_Writes(target))).decode()
    with pytest.raises(PickleRefused):
        deserialize_value(crafted, "py_pickle", serializer())
    assert not target.exists()
    assert deserialize_value('{"a":[1]}', JSON_FORMAT, serializer()) == {"a": [1]}


def old_database(workspace: Path, db_file: Path) -> str:
    """A copy of MADE_BY_OLD (an interrupted run, waiting on a decision, recorded by escalate
    before JSON), its workflow and scripted replies beside it in `workspace`; the run's paths in
    escalate's `runs` table (machine-specific) are made those of the copies. Returns its URL."""
    db_file.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MADE_BY_OLD, db_file)
    copies = {}
    for suffix in (".sr", ".yaml"):
        copies[suffix] = workspace / MADE_BY_OLD.with_suffix(suffix).name
        shutil.copyfile(MADE_BY_OLD.with_suffix(suffix), copies[suffix])
    with closing(sqlite3.connect(db_file)) as conn, conn:
        changed = conn.execute("UPDATE escalate_runs SET path = ?, script = ?, workspace = ? WHERE run_id = ?",
                               (json.dumps(str(copies[".sr"])), json.dumps(str(copies[".yaml"])),
                                json.dumps(str(workspace)), OLD_RUN)).rowcount
    assert changed == 1
    return f"sqlite:///{db_file}"


def test_a_database_written_by_the_escalate_before_json_is_converted_and_continues(tmp_path) -> None:
    db_url = old_database(tmp_path, tmp_path / "escalate.db")
    assert formats(db_url) == {"py_pickle"}
    answers = tmp_path / "answers.yaml"
    answers.write_text("- responseType: option\n  selectedOption: jwt\n")
    proc = escalate(tmp_path, "resume", OLD_RUN, "--db", db_url, "--answers", str(answers))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Plan: move auth to JWT")
    assert formats(db_url) <= {"portable_json", None}
    listed = here(tmp_path, "runs", "--all", "--db", db_url, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    (run,) = [r for r in json.loads(listed.stdout) if r["run_id"] == OLD_RUN]
    assert run["status"] == "done", run


def test_a_database_that_came_with_a_git_repository_is_not_continued(tmp_path) -> None:
    """A database without escalate's marker (MADE_BY_OLD: written before markers) that a git
    repository tracks is someone else's, however the file's owner looks."""
    db_url = old_database(tmp_path, tmp_path / ".escalate" / "escalate.db")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-f", ".escalate/escalate.db"], cwd=tmp_path, check=True)
    proc = escalate(tmp_path, "resume", OLD_RUN, "--db", db_url)
    assert proc.returncode == 2, proc.stderr
    assert "tracked by git" in proc.stderr and "escalate trust" in proc.stderr and "Traceback" not in proc.stderr
    assert formats(db_url) == {"py_pickle"}  # not converted: never read


def test_a_database_made_for_someone_else_waits_for_escalate_trust(tmp_path, monkeypatch) -> None:
    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    run_id = interrupted_run(tmp_path, db_url)  # marked as this test user's (its own config)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-home"))  # the file reached someone else
    answers = tmp_path / "answers.yaml"
    answers.write_text("- responseType: option\n  selectedOption: jwt\n")
    refused = escalate(tmp_path, "resume", run_id, "--db", db_url, "--answers", str(answers))
    assert refused.returncode == 2 and "not yours" in refused.stderr and "Traceback" not in refused.stderr
    trusted = here(tmp_path, "trust", "--db", db_url)
    assert trusted.returncode == 0, trusted.stderr
    proc = escalate(tmp_path, "resume", run_id, "--db", db_url, "--answers", str(answers))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Plan: move auth to JWT")


def test_the_plain_unpickler_builds_plain_values_only(tmp_path) -> None:
    from engine.durable.serialization import plain_unpickle

    plain = {"a": [1, 2.5, "x", None, True, (3, 4)], "s": {1}, "f": frozenset({2})}
    assert plain_unpickle(base64.b64encode(pickle.dumps(plain)).decode()) == plain
    target = tmp_path / "PWNED"
    for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
        crafted = base64.b64encode(pickle.dumps(_Writes(target), protocol=protocol)).decode()
        with pytest.raises(pickle.UnpicklingError):
            plain_unpickle(crafted)
    assert not target.exists()
    assert time.time()  # nothing timed here
