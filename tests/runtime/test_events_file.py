"""`escalate run --events FILE` with files that cannot take events: one line, never a traceback.

Real files and devices, `escalate run` as a real subprocess of this checkout's code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.runtime.events import EventSink

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
    ],
)
def test_a_file_that_cannot_be_appended_to_is_a_usage_error(tmp_path: Path, events: str, why: str) -> None:
    if events == "FIFO":
        events = str(tmp_path / "fifo")
        os.mkfifo(events)  # nobody reads it: opening it for writing would wait for ever
    done = escalate_run(events)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"--events {events}: cannot write: {why}\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_is_told_once_and_the_run_goes_on() -> None:
    done = escalate_run("/dev/full")
    assert (done.returncode, done.stdout) == (0, "3.14159\n"), done.stderr
    run_line, models, told = done.stderr.splitlines()  # `run ID` first, as every run prints, then the models
    assert models.startswith("models: ")
    assert run_line.startswith("run r")
    assert told == "events file /dev/full: cannot write: No space left on device; no more events are written to it"


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
