"""`escalate run --events FILE` with files that cannot take events: one line, never a traceback.

Real files and devices, `escalate run` as a real subprocess of this checkout's code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.runtime.events import EventSink
from tests.cli_here import escalate_here

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "engine" / "examples" / "pingpong.sr"


def escalate_run(events: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "run", str(EXAMPLE), "--script", str(EXAMPLE.with_suffix(".yaml")),
         "--input", "3.14", "--events", events],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=60,
    )


@pytest.mark.parametrize(
    ("events", "why"),
    [
        ("/proc/self/mem", "Invalid argument"),
        ("/", "Is a directory"),
        ("/nonexistent/e.jsonl", "No such file or directory"),
        ("FIFO", "a FIFO that no process is reading"),
        ("/dev/full", "No space left on device"),  # opens, but takes no write: checked before the run
    ],
)
def test_a_file_that_cannot_be_appended_to_is_a_usage_error(tmp_path: Path, events: str, why: str) -> None:
    if events == "FIFO":
        events = str(tmp_path / "fifo")
        os.mkfifo(events)  # nobody reads it: opening it for writing would wait for ever
    done = escalate_run(events)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"--events {events}: cannot write: {why}\n"


GATED = """streetrace v1

tool cli = builtin streetrace.cli

prompt work: \"\"\"You do the work.\"\"\"

agent worker:
    tools cli
    instruction work

flow main:
    $done = run agent worker $input
    return $done
"""

# The command waits until the events file's reader is gone, so that what follows cannot be written.
GATED_SCRIPT = """agents:
  worker:
    - tool: run_command
      args: {command: "while [ ! -e reader-gone ]; do sleep 0.05; done"}
    - "finished"
"""


def test_a_write_that_fails_later_is_told_once_and_the_run_goes_on(tmp_path: Path) -> None:
    """A FIFO whose reader reads the first event, then goes away: the next writes fail (EPIPE)."""
    (tmp_path / "gated.sr").write_text(GATED)
    (tmp_path / "gated.yaml").write_text(GATED_SCRIPT)
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDWR)  # a reader from now on, which never blocks on the open

    def read_one_event_then_go() -> None:
        with os.fdopen(reader, "rb") as events:
            assert json.loads(events.readline())["type"]
        (tmp_path / "reader-gone").touch()

    thread = threading.Thread(target=read_one_event_then_go)
    thread.start()
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli.main", "run", "gated.sr", "--events", str(fifo)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, timeout=120)
    thread.join(30)
    assert (done.returncode, done.stdout) == (0, "finished\n"), done.stderr
    told = [line for line in done.stderr.splitlines() if line.startswith("events file")]
    assert told == [f"events file {fifo}: cannot write: Broken pipe; no more events are written to it"], done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_the_sink_warns_once_then_keeps_its_events_in_memory() -> None:
    sink = EventSink("r1", Path("/dev/full"))
    seen: list[str] = []
    sink.subscribe(lambda event: seen.append(event.type))
    for n in range(5):
        sink.emit("log", message=f"line {n}")
    sink.close()
    assert seen == ["log", "log"] + ["log"] * 4
    warnings = [e for e in sink.events if e.fields.get("level") == "warning"]
    assert len(warnings) == 1 and "No space left on device" in warnings[0].fields["message"]
    assert warnings[0] is sink.events[1]  # right after the event that could not be written


def test_a_regular_file_gets_this_runs_events_only(tmp_path: Path) -> None:
    events = tmp_path / "e.jsonl"
    events.write_text("stale line from an earlier run\n")
    done = escalate_run(str(events))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in events.read_text().splitlines()]
    assert lines[-1]["type"] == "flow_result" and all("type" in line for line in lines)


DEMO = ROOT / "engine" / "demo" / "auth-refactor.sr"


def escalate(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=cwd, timeout=60)


@pytest.mark.parametrize(
    ("events", "why", "recorded"),
    [
        ("/dev/full", "No space left on device", True),
        # A run killed before its first event was kept: nothing to copy, the check is made all the same.
        ("/dev/full", "No space left on device", False),
        ("/proc/self/mem", "Invalid argument", False),
        ("FIFO", "a FIFO that no process is reading", True),  # waited on for ever before
    ],
)
def test_resume_checks_the_events_file_before_the_run_continues(tmp_path: Path, events: str, why: str,
                                                                recorded: bool) -> None:
    db_file = tmp_path / "runs.db"
    db = f"sqlite:///{db_file}"
    # The run, reading and answering it, and the resume that continues it, in this process
    # (tests/cli_here.py): the test is of the `resume` that refuses the file.
    first = escalate_here("run", str(DEMO), "--input", "Fix login", "--db", db, cwd=tmp_path)
    assert first.returncode == 4, first.stderr
    run_id = first.stderr.splitlines()[0].removeprefix("run ")
    (waiting,) = json.loads(escalate_here("runs", "--db", db, "--format", "json", cwd=tmp_path).stdout)[0]["pending"]
    assert escalate_here("answer", waiting["id"], "--option", "jwt", "--db", db, cwd=tmp_path).returncode == 0
    if not recorded:
        import sqlite3

        with sqlite3.connect(db_file) as c:
            c.execute("DELETE FROM escalate_events WHERE run_id = ?", (run_id,))
    if events == "FIFO":
        events = str(tmp_path / "fifo")
        os.mkfifo(events)

    refused = escalate(tmp_path, "resume", run_id, "--events", events, "--db", db)
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
    assert refused.stderr == f"--events {events}: cannot write: {why}\n"
    (run,) = json.loads(escalate_here("runs", "--all", "--db", db, "--format", "json", cwd=tmp_path).stdout)
    assert run["status"] == "interrupted"  # answered, not continued: the plan was never written

    continued = escalate_here("resume", run_id, "--events", str(tmp_path / "e.jsonl"), "--db", db, cwd=tmp_path)
    assert continued.returncode == 0 and continued.stdout.startswith("Plan: move auth to JWT"), continued.stderr
