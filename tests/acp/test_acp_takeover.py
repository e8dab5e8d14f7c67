"""A worker takes over a crashed ACP run (docs/acp.md, Lifetime): a run queued with `run --agent
--detach` on a durable SQLite database, executed by `escalate worker` (in another folder than
the run's workspace), SIGKILLed while the agent works on its second turn; a second worker
continues it: the agent is started again in the run's workspace, its session loaded where it
advertises loadSession, else a new session told the recorded turns; the log says which; the
finished turn is not asked again. (Before the kill, the run parks while it waits for its answer
and comes back: the agent is started again that way too.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from engine.durable.database import Database
from tests.acp.conftest import agent_command
from tests.acp.test_acp_cli import ENGINE, _env, _pending
from tests.acp.test_acp_resume import ASK
from tests.cli_here import escalate_here

WAIT = 120.0  # seconds any one step may take on a loaded machine (never an assertion on time)


def _until(done: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while not (found := done()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return found


def _trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _worker(db: str, folder: Path) -> subprocess.Popen[bytes]:
    # Parked 0.2 s after it asks (the test waits for that), not after 2 s of grace.
    return subprocess.Popen([*ENGINE, "worker", "--db", db], cwd=folder, env={**_env(), "ESCALATE_PARK_AFTER": "0.2"},
                            stdout=subprocess.DEVNULL, stderr=(folder / "worker.err").open("ab"))


@pytest.mark.parametrize("can_load", [True, False])
def test_a_worker_takes_over_a_killed_acp_run(tmp_path: Path, can_load: bool) -> None:
    workspace, elsewhere = tmp_path / "ws", tmp_path / "worker"
    workspace.mkdir()
    elsewhere.mkdir()
    db = f"sqlite:///{tmp_path / 'e.db'}"
    trace, script = tmp_path / "trace.jsonl", tmp_path / "script.json"
    script.write_text(json.dumps({"trace": str(trace), "state": str(tmp_path / "state"), "load_session": can_load,
                                  "turns": [[{"say": f"I looked at auth.py. {ASK}"}],
                                            [{"say": "working on it\n"}, {"wait": 60}],  # killed in here
                                            [{"say": "kept the sessions"}]]}))
    queued = escalate_here("run", "--agent", agent_command(script), "--input", "fix the login", "--detach", "--db", db,
                           cwd=workspace)  # queues it (here: what a worker takes over is the point)
    assert queued.returncode == 0, queued.stderr
    run_id = queued.stdout.strip()
    worker = _worker(db, elsewhere)
    database = Database(db)
    try:
        pending = _pending(tmp_path, db)
        # Waiting for a person, the run leaves the worker (parked); the answer brings it back, and
        # the agent is started again a first time (the same way as after the kill).
        _until(lambda: (r := database.get_run(run_id)) is not None and r["status"] == "parked", "the run parked")
        assert escalate_here("answer", pending["id"], "--option", "keep", "--db", db, cwd=tmp_path).returncode == 0
        _until(lambda: sum(t["event"] == "prompt" for t in _trace(trace)) == 2, "the second turn under way")
        # Its "started again" line stored before the kill: the newest events of a killed process
        # may be lost by design (database.add_event), and the agent waits 60 s in this turn anyway.
        _until(lambda: any("started again" in str(e.get("message")) for e in database.events_of(run_id)),
               "the first 'started again' stored")
    finally:
        worker.kill()  # SIGKILL, mid-turn
        worker.wait()
    second = _worker(db, elsewhere)
    try:
        row = _until(lambda: (r := database.get_run(run_id)) is not None and r["status"] == "done" and r, "the run done")
        events = database.events_of(run_id)
    finally:
        second.terminate()
        second.wait(60)
        database.close()
        for agent in {t["pid"] for t in _trace(trace) if t["event"] == "new_session"}:  # the first worker's orphan
            try:
                os.kill(agent, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert json.loads(row["result"]) == "kept the sessions", (tmp_path / "worker" / "worker.err").read_text()
    seen = _trace(trace)
    prompts = [t["text"] for t in seen if t["event"] == "prompt"]
    assert len(prompts) == 3 and prompts.count(prompts[0]) == 1  # the finished turn was not asked again
    assert "Chosen option: keep - Keep sessions." in prompts[1]
    assert prompts[2].endswith(prompts[1])  # the interrupted turn, asked again
    sessions = [t for t in seen if t["event"] in ("new_session", "load_session")]
    assert {t["cwd"] for t in sessions if t["event"] == "new_session"} == {str(workspace.resolve())}  # not the worker's folder
    logs = [str(e.get("message")) for e in events if e["type"] == "log"]
    again = [line for line in logs if "started again" in line]
    assert len(again) == 2, logs  # after the parking, after the kill
    if can_load:
        assert [t["event"] for t in sessions] == ["new_session", "load_session", "load_session"]
        assert {t["session"] for t in sessions[1:]} == {f"s-{sessions[0]['pid']}"}
        assert all("started again; loaded its session" in line for line in again), again
        assert prompts[2] == prompts[1]
    else:
        assert [t["event"] for t in sessions] == ["new_session"] * 3
        assert all("cannot load its session, so a new session" in line and "summary of the 1 recorded turns" in line
                   for line in again), again
        assert "Earlier in this task" in prompts[2] and "I looked at auth.py." in prompts[2]
    assert sum(e["type"] == "human_escalation" for e in events) == 1  # the question was not asked again


def test_a_live_only_event_is_kept_while_the_replay_is_dropped() -> None:
    """The log line saying how the agent was started again comes while a continued run's events
    are still counted as replayed (the turn under way at the crash had logged lines): it is
    recorded after every recorded event, and the replay's count is not shifted."""
    from engine.runtime.events import EventSink

    recorded: list[tuple[int, str]] = []
    sink = EventSink("r1", record=lambda seq, event: recorded.append((seq, event.fields["message"])), replayed=3)
    for message in ("replayed 1", "replayed 2"):
        sink.emit("log", message=message)
    sink.emit_live("log", message="started again")
    sink.emit("log", message="replayed 3 (the dead process's line of the turn under way)")
    sink.emit("log", message="new")
    assert recorded == [(4, "started again"), (5, "new")]
    assert [e.fields["message"] for e in sink.events] == ["started again", "new"]
