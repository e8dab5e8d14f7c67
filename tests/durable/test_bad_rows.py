"""Every row is checked when read (issue 22, finding 11): a database holding rows escalate did not
write (a cloned repository's database, another version's rows, a disk error) gives no traceback.
Each hostile row below is written with raw SQL beside good rows; `escalate runs`, `runs --all
--format json` (real processes) and `escalate answer` (run in this process, tests/cli_here.py)
name each bad row in one line and list the good ones; `answer` on a bad escalation ends with
that line (exit 2); the console lists the good escalation and says once that a row was skipped."""

from __future__ import annotations

import copy
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine.durable.database import Database
from tests.cli_here import escalate_here

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

NOW = time.time()
RUN = "rgood"


def payload(esc_id: str) -> dict[str, Any]:
    return {"escalation": {"id": esc_id, "task_id": "t", "run_id": RUN, "agent": "worker", "reason": "other",
                           "question": f"question of {esc_id}?", "context": "", "options": [
                               {"id": "keep", "label": "Keep", "description": "", "recommended": True}],
                           "allow_agent_decision": False, "timeout": None, "origin": "agent_text", "created_at": NOW},
            "policy": {"deadline": None, "on_timeout": "wait", "option_id": None, "timeout_seconds": None},
            "extra": {}}


DECISION = {"responseType": "option", "selectedOption": "keep", "textResponse": None, "additionalInstructions": None,
            "resolvedBy": "human", "resolvedAt": NOW, "note": "", "stopsTask": False, "editedArgs": None, "rule": "",
            "via": "test", "shown": "", "decidedBy": "someone"}


def edited(esc_id: str, path: str, value: Any, *, delete: bool = False) -> str:
    """The good payload of `esc_id` with one key (dotted path) set to `value` or deleted."""
    data = payload(esc_id)
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if delete:
        del node[last]
    else:
        node[last] = value
    return json.dumps(data)


def decided(**change: Any) -> str:
    data = copy.deepcopy(DECISION)
    for key, value in change.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


DEEP = "[" * 100_000 + "]" * 100_000  # RecursionError in json.loads
NESTED = json.dumps(payload("x"))[:-1] + ', "deep": ' + "[" * 200 + "]" * 200 + "}"  # parses; too deep to use

# (id, column overrides) of an escalation of the good run: each is bad in one way.
ESCALATIONS: list[tuple[str, dict[str, Any]]] = [
    ("e-not-json", {"payload": "not json"}),
    ("e-empty", {"payload": ""}),
    ("e-list", {"payload": "[]"}),
    ("e-null", {"payload": "null"}),
    ("e-no-policy", {"payload": json.dumps({"escalation": payload("e-no-policy")["escalation"]})}),
    ("e-no-question", {"payload": edited("e-no-question", "escalation.question", None, delete=True)}),
    ("e-question-int", {"payload": edited("e-question-int", "escalation.question", 5)}),
    ("e-reason", {"payload": edited("e-reason", "escalation.reason", "made_up")}),
    ("e-options-str", {"payload": edited("e-options-str", "escalation.options", "abc")}),
    ("e-option-id-int", {"payload": edited("e-option-id-int", "escalation.options.0.id", 1)}),
    ("e-option-no-label", {"payload": edited("e-option-no-label", "escalation.options.0.label", None, delete=True)}),
    ("e-origin", {"payload": edited("e-origin", "escalation.origin", "the moon")}),
    ("e-created-at-text", {"payload": edited("e-created-at-text", "escalation.created_at", "yesterday")}),
    ("e-created-at-inf", {"payload": edited("e-created-at-inf", "escalation.created_at", 1e400)}),
    ("e-created-at-nan", {"payload": edited("e-created-at-nan", "escalation.created_at", float("nan"))}),
    ("e-on-timeout", {"payload": edited("e-on-timeout", "policy.on_timeout", "explode")}),
    ("e-deadline-text", {"payload": edited("e-deadline-text", "policy.deadline", "soon")}),
    ("e-extra-list", {"payload": edited("e-extra-list", "extra", [1, 2])}),
    ("e-deep", {"payload": DEEP}),
    ("e-nested", {"payload": NESTED.replace('"id": "x"', '"id": "e-nested"', 1)}),
    ("e-huge", {"payload": json.dumps({**payload("e-huge"), "pad": "x" * (17 * 1024 * 1024)})}),
    ("e-bytes", {"payload": json.dumps(payload("e-bytes")).encode()}),
    ("e-not-utf8", {"payload": b"\xff\xfe\x00garbage"}),
    ("e-other-id", {"payload": json.dumps(payload("someone-else"))}),
    ("e-status", {"status": "exploded"}),
    ("e-created-text", {"created": "tuesday"}),
    ("e-created-bytes", {"created": b"\x01\x02"}),
    ("e-deadline-col", {"deadline": "later"}),
    ("e-decided-at", {"status": "decided", "decision": decided(), "resolved_by": "human", "decided_at": "x"}),
    ("e-decision-not-json", {"status": "decided", "decision": "{nope", "resolved_by": "human"}),
    ("e-decision-type", {"status": "decided", "decision": decided(responseType="maybe"), "resolved_by": "human"}),
    ("e-decision-no-by", {"status": "decided", "decision": decided(resolvedBy=...), "resolved_by": "human"}),
    ("e-decision-at-text", {"status": "decided", "decision": decided(resolvedAt="noon"), "resolved_by": "human"}),
    ("e-decision-args", {"status": "decided", "decision": decided(editedArgs="rm -rf /"), "resolved_by": "human"}),
    ("e-decision-list", {"status": "decided", "decision": "[]", "resolved_by": "human"}),
    ("e-decision-deep", {"status": "decided", "decision": DEEP, "resolved_by": "human"}),
]

# (run id, column overrides) of a run: each is bad in one way.
RUNS: list[tuple[str, dict[str, Any]]] = [
    ("r-started-text", {"started": "yesterday"}),
    ("r-started-huge", {"started": 1e300}),
    ("r-status", {"status": "sleeping"}),
    ("r-path-not-json", {"path": "/plain/path.sr"}),
    ("r-path-number", {"path": "5"}),
    ("r-workspace-bytes", {"workspace": b"\x00\x01"}),
    ("r-result", {"status": "done", "result": "{broken", "finished": NOW}),
    ("r-task-bytes", {"task": b"\xff\xfe"}),
    ("r-heartbeat", {"heartbeat": "x"}),
    ("r-finished", {"status": "done", "finished": "x"}),
]


def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
    keys = list(row)
    conn.execute(f"INSERT INTO {table} ({', '.join(keys)}) VALUES ({', '.join('?' for _ in keys)})", [row[k] for k in keys])


def _run_row(run_id: str, **change: Any) -> dict[str, Any]:
    return {"run_id": run_id, "task": f"task of {run_id}", "workflow": "w", "path": json.dumps("/w.sr"), "flow": None,
            "input": "", "script": None, "rules": None, "workspace": json.dumps("/"), "status": "waiting", "result": None,
            "error": None, "started": NOW, "finished": None, "owner": None, "heartbeat": None, **change}


def _escalation_row(esc_id: str, **change: Any) -> dict[str, Any]:
    return {"id": esc_id, "run_id": RUN, "created": NOW, "deadline": None, "payload": json.dumps(payload(esc_id)),
            "status": "pending", "decision": None, "resolved_by": None, "decided_at": None, **change}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    """A database with good rows (a waiting run, its pending escalation `good.1`, a decided one)
    and every hostile row above."""
    folder = tmp_path_factory.mktemp("hostile")
    path = folder / "escalate.db"
    Database(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path)
    with conn:
        _insert(conn, "escalate_runs", _run_row(RUN))
        _insert(conn, "escalate_escalations", _escalation_row("good.1"))
        _insert(conn, "escalate_escalations", _escalation_row("good.0", status="decided", decision=json.dumps(DECISION),
                                                                resolved_by="human", decided_at=NOW))
        for esc_id, change in ESCALATIONS:
            _insert(conn, "escalate_escalations", _escalation_row(esc_id, **change))
        for run_id, change in RUNS:
            _insert(conn, "escalate_runs", _run_row(run_id, **change))
        _insert(conn, "escalate_run_tokens", {"run_id": RUN, "tokens": "many"})
    conn.close()
    return path


def escalate(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """`answer` run in this process: what it says of one row, not what its process does."""
    return escalate_here(*argv, cwd=cwd)


@pytest.fixture(scope="module")
def listings(hostile: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each listing a process of its own: a process says once that a row was skipped (rows.py
    `report`), and each must name every bad row."""
    url = f"sqlite:///{hostile}"

    def listing(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "engine", "runs", "--all", *argv, "--db", url], cwd=hostile.parent,
                              capture_output=True, text=True, timeout=300)

    return {"text": listing(), "json": listing("--format", "json")}


def test_there_are_forty_hostile_rows() -> None:
    assert len(ESCALATIONS) + len(RUNS) >= 40


@pytest.mark.parametrize("kind", ["text", "json"])
def test_listings_show_the_good_rows(listings, kind: str) -> None:
    done = listings[kind]
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    if kind == "json":
        (run,) = json.loads(done.stdout)
        assert run["run_id"] == RUN and [p["id"] for p in run["pending"]] == ["good.1"]
        assert [d["id"] for d in run["decisions"]] == ["good.0"] and run["tokens"] == 0
    else:
        assert done.stdout.splitlines()[0].startswith(f"{RUN}  waiting") and "good.1" in done.stdout  # a person must answer: waiting (issue 27)
    assert "escalate_run_tokens row 'rgood'" in done.stderr


@pytest.mark.parametrize(("name", "table"), [(e, "escalate_escalations") for e, _ in ESCALATIONS]
                         + [(r, "escalate_runs") for r, _ in RUNS])
@pytest.mark.parametrize("kind", ["text", "json"])
def test_each_bad_row_is_named_in_one_line(listings, name: str, table: str, kind: str) -> None:
    lines = [line for line in listings[kind].stderr.splitlines() if f"{table} row '{name}'" in line]
    assert len(lines) == 1, listings[kind].stderr[-3000:]
    assert len(lines[0]) < 500


@pytest.mark.parametrize("esc_id", [e for e, _ in ESCALATIONS])
def test_answer_on_a_bad_row_says_which_and_decides_nothing(hostile: Path, esc_id: str) -> None:
    done = escalate(hostile.parent, "answer", esc_id, "--option", "keep", "--db", f"sqlite:///{hostile}")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    (line,) = done.stderr.splitlines()
    assert f"escalate_escalations row '{esc_id}'" in line


def _copy(hostile: Path, to: Path) -> Path:
    """The module's database, copied whole (its WAL too, through SQLite's backup): a test that
    decides or edits works on its own copy, whatever order the tests run in."""
    copy_path = to / "escalate.db"
    source, target = sqlite3.connect(hostile), sqlite3.connect(copy_path)
    with target:
        source.backup(target)
    source.close()
    target.close()
    return copy_path


def test_answer_on_the_good_row_beside_them_decides_it(hostile: Path, tmp_path) -> None:
    copy_path = _copy(hostile, tmp_path)
    done = escalate(tmp_path, "answer", "good.1", "--option", "keep", "--db", f"sqlite:///{copy_path}")
    assert (done.returncode, done.stdout) == (0, "good.1: decided (option keep)\n"), done.stderr


async def test_the_console_lists_the_good_escalation_and_says_once_which_rows_it_skipped(hostile: Path, tmp_path) -> None:
    from engine.kernel.clock import RealClock
    from tests.tui.helpers import SIZE, make_app, make_session, wait_until

    copy_path = _copy(hostile, tmp_path)
    conn = sqlite3.connect(copy_path)
    with conn:  # the good run is alive elsewhere: the console lists it, never continues it
        conn.execute("UPDATE escalate_runs SET owner = 'elsewhere-1-abc', heartbeat = ? WHERE run_id = ?",
                     (time.time() + 3600, RUN))
    conn.close()
    session = make_session([], clock=RealClock(), db_url=f"sqlite:///{copy_path}", workspace=tmp_path)
    app = make_app(session, open_engine=True)
    told: list[str] = []
    notify = app.notify

    def spy(message: str, **kw: Any) -> None:
        if kw.get("title") == "A row of the database was skipped":
            told.append(message)
        notify(message, **kw)

    app.notify = spy  # type: ignore[method-assign]
    bad_pending = [e for e, change in ESCALATIONS if change.get("status", "pending") == "pending"]
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, lambda: [p.escalation.id for p in session.pending()] == ["good.1"], 60, "the good escalation")
        await wait_until(pilot, lambda: all(any(f"row '{e}'" in line for line in told) for e in bad_pending), 30,
                         "a line for each bad pending escalation")
        await pilot.pause(3)  # polls and news read the rows again: nothing more is said
        assert app.is_running
    for esc_id in bad_pending:
        assert sum(f"escalate_escalations row '{esc_id}'" in line for line in told) == 1, told
    assert len(told) == len(set(told))


def test_a_listener_that_fails_stops_neither_the_others_nor_the_read() -> None:
    """A console that has closed (its loop gone) left its listener: the next row skipped in this
    process still reaches the others, and the read that found it goes on (it raised
    `RuntimeError: Event loop is closed` into the reader, and the next console heard nothing)."""
    from engine.durable.rows import BadRow, on_bad_row, report

    def closed(line: str) -> None:
        raise RuntimeError("Event loop is closed")

    heard: list[str] = []
    stops = [on_bad_row(closed), on_bad_row(heard.append)]
    try:
        bad = BadRow(f"escalate_escalations row 'after-a-closed-console-{time.time_ns()}': payload: not JSON")
        report(bad)
    finally:
        for stop in stops:
            stop()
    assert heard == [f"skipped {bad}"]
