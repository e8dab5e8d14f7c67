"""Recorded steps in escalate's own table (issue 26, engine/durable/steps.py): a run killed with
SIGKILL and recovered by DBOS replays its recorded steps from one read, at the numbers DBOS gave
them (parallel branches included), and runs only the step that was in flight; an execution that
records a step another one recorded first stops, the first result kept; a run recorded by an
earlier escalate in DBOS's table replays from there. Real processes, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.durable.test_pickle_rows import OLD_RUN, old_database

ROOT = Path(__file__).parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

# One process: a DBOS workflow (launched as escalate's host launches it) of steps, some of them
# parallel branches; each step appends {label, key, pid} to LOG as it runs live.
SCRIPT = r'''
import asyncio, json, os, sys
import sqlalchemy as sa
from dbos import DBOS, SetWorkflowID
from engine.durable import steps
from engine.durable.database import Database
from engine.durable.serialization import serializer

url, log, mode = sys.argv[1], sys.argv[2], sys.argv[3]
db = Database(url)

async def work(label):
    key = steps.step_key()
    with open(log, "a") as out:
        out.write(json.dumps({"label": label, "key": key, "pid": os.getpid()}) + "\n")
    if mode == "crash" and label == "c":
        os.kill(os.getpid(), 9)  # in flight: its result never recorded
    if mode == "conflict" and label == "a":  # another execution records this step first
        number = int(key.rsplit(".", 1)[1])
        with db.engine.begin() as c:
            c.execute(sa.text("INSERT INTO escalate_steps (run_id, step, name, result) VALUES (:r, :s, 'one', :v)"),
                      {"r": "run-1", "s": number, "v": json.dumps({"label": "theirs"})})
    return {"label": label, "key": key}

@DBOS.workflow(name="steps_table_test")
async def flow(run_id):
    getattr(steps, "begin", lambda run: None)(run_id)  # (and the code before it: no begin)
    try:
        got = [await steps.step("one", work, "a")]
    except BaseException as exc:
        return {"stopped": type(exc).__name__}
    got += await asyncio.gather(*(steps.step("branch", work, f"b{i}") for i in range(3)))
    got.append(await steps.step("last", work, "c"))
    return got

selects = []
sa.event.listen(sa.engine.Engine, "before_cursor_execute",
                lambda conn, cursor, sql, *rest: selects.append(sql) if sql.lstrip().startswith("SELECT") and (
                    "escalate_steps" in sql or "operation_outputs" in sql) else None)

async def main():
    config = {"name": "escalate-test", "system_database_url": db.url, "executor_id": "executor-1",
              "run_admin_server": False, "log_level": "ERROR", "serializer": serializer()}
    if db.dbos_engine() is not None:
        config["system_database_engine"] = db.dbos_engine()
    DBOS(config=config)
    DBOS.launch()  # the second time: DBOS recovers the workflow its executor left pending
    try:
        steps.enable(db)
    except TypeError:  # the code before escalate_steps
        steps.enable()
    if mode == "recover":
        result = await (await DBOS.retrieve_workflow_async("run-1")).get_result()
    else:
        with SetWorkflowID("run-1"):
            handle = await DBOS.start_workflow_async(flow, "run-1")
        result = await handle.get_result()
    print(json.dumps({"result": result, "selects": len(selects)}))
    DBOS.destroy(workflow_completion_timeout_sec=0)
    db.close()

asyncio.run(main())
'''


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'steps.db'}"
    return request.getfixturevalue("pg_url")


def run_script(tmp_path: Path, db_url: str, mode: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "flow.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script), db_url, str(tmp_path / "live.jsonl"), mode], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)


def live(tmp_path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in (tmp_path / "live.jsonl").read_text().splitlines()]


def rows(db_url: str, sql: str) -> list[tuple]:
    engine = sa.create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as c:
            return [tuple(row) for row in c.execute(sa.text(sql))]
    finally:
        engine.dispose()


def test_a_killed_run_replays_its_steps_from_one_read_at_the_numbers_dbos_gave_them(tmp_path, db_url) -> None:
    crashed = run_script(tmp_path, db_url, "crash")
    assert crashed.returncode == -9, crashed.stderr
    first = live(tmp_path)
    assert [e["label"] for e in first][0] == "a" and sorted(e["label"] for e in first[1:4]) == ["b0", "b1", "b2"]
    assert first[-1]["label"] == "c"
    recovered = run_script(tmp_path, db_url, "recover")
    assert recovered.returncode == 0, recovered.stderr
    out = json.loads(recovered.stdout.strip().splitlines()[-1])
    keys = {e["label"]: e["key"] for e in first}
    # Replayed: the results recorded, each at the key (RUN.STEP) it had; c, in flight at the
    # kill, ran again at the same key; nothing else ran again.
    assert out["result"] == [{"label": label, "key": keys[label]} for label in ("a", "b0", "b1", "b2", "c")]
    again = [e for e in live(tmp_path) if e["pid"] != first[0]["pid"]]
    assert [(e["label"], e["key"]) for e in again] == [("c", keys["c"])]
    assert len(set(keys.values())) == 5 and all(k.startswith("run-1.") for k in keys.values())
    # The recovery read the run's steps once (escalate's table; whether DBOS's is there, and
    # DBOS's, for a run recorded by an older escalate), not once a step (DBOS: 2 SELECTs each).
    assert out["selects"] <= 3, out
    recorded = rows(db_url, "SELECT step, name FROM escalate_steps WHERE run_id = 'run-1' ORDER BY step")
    assert [name for _, name in recorded] == ["one", "branch", "branch", "branch", "last"]
    assert [f"run-1.{step}" for step, _ in recorded] == [keys[label] for label in ("a", "b0", "b1", "b2", "c")]


def test_an_execution_that_records_a_step_recorded_first_by_another_stops(tmp_path, db_url) -> None:
    proc = run_script(tmp_path, db_url, "conflict")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["result"] == {"stopped": "DBOSWorkflowConflictIDError"}  # as DBOS stops an execution that lost its workflow
    (row,) = rows(db_url, "SELECT name, result FROM escalate_steps WHERE run_id = 'run-1'")
    assert row == ("one", json.dumps({"label": "theirs"}))  # the first record kept
    assert [e["label"] for e in live(tmp_path)] == ["a"]  # nothing after it ran


def test_a_run_recorded_in_dbos_s_table_by_an_older_escalate_replays_from_there(tmp_path) -> None:
    """The run of made-by-4fad3c6.db (steps in DBOS's operation_outputs, written before
    escalate_steps) continues: none of its recorded steps runs again, the new ones are ours."""
    db_url = old_database(tmp_path, tmp_path / "escalate.db")
    db_file = tmp_path / "escalate.db"
    with closing(sqlite3.connect(db_file)) as conn:
        old_steps = conn.execute("SELECT function_id, function_name FROM operation_outputs WHERE workflow_uuid = ?",
                                 (OLD_RUN,)).fetchall()
    assert old_steps
    answers = tmp_path / "answers.yaml"
    answers.write_text("- responseType: option\n  selectedOption: jwt\n")
    audit = tmp_path / "audit.jsonl"
    proc = subprocess.run([sys.executable, "-m", "engine", "resume", OLD_RUN, "--db", db_url, "--answers", str(answers)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ESCALATE_STEP_AUDIT": str(audit)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Plan: move auth to JWT")
    ran = [json.loads(line) for line in audit.read_text().splitlines()]
    old_keys = {f"{OLD_RUN}.{number}" for number, _ in old_steps}
    assert ran and not [e for e in ran if e["key"] in old_keys]  # replayed, not run again
    with closing(sqlite3.connect(db_file)) as conn:
        ours = conn.execute("SELECT step FROM escalate_steps WHERE run_id = ?", (OLD_RUN,)).fetchall()
        after = conn.execute("SELECT count(*) FROM operation_outputs WHERE workflow_uuid = ? AND function_name = 'model turn'",
                             (OLD_RUN,)).fetchone()[0]
    assert {f"{OLD_RUN}.{number}" for (number,) in ours} == {e["key"] for e in ran if e["kind"] == "recorded"}
    assert min(number for (number,) in ours) > max(number for number, _ in old_steps)
    assert after == sum(1 for _, name in old_steps if name == "model turn")  # nothing more in DBOS's table


def test_a_recorded_step_that_is_not_json_is_named_in_one_line(tmp_path) -> None:
    """A hostile row in escalate_steps (a copied database): the run stops, naming the row; no
    traceback, nothing else of the row used."""
    from tests.durable.test_pickle_rows import escalate, interrupted_run

    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    run_id = interrupted_run(tmp_path, db_url)
    with closing(sqlite3.connect(tmp_path / "escalate.db")) as conn, conn:
        (first,) = conn.execute("SELECT min(step) FROM escalate_steps WHERE run_id = ?", (run_id,)).fetchone()
        conn.execute("UPDATE escalate_steps SET result = '{not json' WHERE run_id = ? AND step = ?", (run_id, first))
    proc = escalate(tmp_path, "resume", run_id, "--db", db_url)
    assert proc.returncode not in (0, 4), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert f"escalate_steps row '{run_id}.{first}': result: not JSON" in proc.stderr + proc.stdout


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_step_statements_are_built_from_the_table_once_per_dialect(dialect) -> None:
    """One place builds statements (database.py, beside the events batch's): the step's INSERT
    and the run's SELECT come from `step_results`, built once; steps.py writes no SQL text."""
    import ast

    from engine.durable.database import step_results, step_statements

    built = step_statements(dialect)
    assert step_statements(dialect) is built
    assert built.record.table is step_results
    assert [c.name for c in built.recorded.selected_columns] == ["step", "name", "result", "error"]
    assert built.recorded.get_final_froms() == [step_results]
    tree = ast.parse((ROOT / "engine" / "durable" / "steps.py").read_text())
    calls = [node.func for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert not [f for f in calls if getattr(f, "attr", getattr(f, "id", None)) == "text"]
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    assert not [s for s in strings if s.lstrip().upper().startswith(("INSERT ", "SELECT "))]
