"""Durations set through the environment (engine/durable/settings.py). The owner-silence period (STALE_AFTER: no heartbeat this long and a process of another host
counts as gone, its runs interrupted) is a setting every process reads the same way,
`$ESCALATE_STALE_AFTER`, read once; a value that is not a number of seconds of at least two
heartbeats is named in one line and the default kept. Real processes on a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.durable.database import Database

LIST = ("import sys; from engine.durable.database import Database, STALE_AFTER; "
        "print(STALE_AFTER, sorted(r['run_id'] for r in Database(sys.argv[1]).interrupted_runs()))")


def _interrupted(url: str, value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ESCALATE_STALE_AFTER"}
    if value is not None:
        env["ESCALATE_STALE_AFTER"] = value
    return subprocess.run([sys.executable, "-c", LIST, url], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    db = Database(url)
    try:  # a run held by a process of another host (no pid to look up), silent for a minute
        db.create_run(run_id="r0far", task="t", workflow="w", path="w.sr", input="", workspace=str(tmp_path),
                      status="running", started=time.time() - 60, owner="elsewhere-1-abcdef12", heartbeat=time.time() - 60)
    finally:
        db.close()
    return url


def test_the_silence_period_is_read_from_the_environment(url: str) -> None:
    default, long = _interrupted(url, None), _interrupted(url, "3600")
    assert default.stdout.split() == ["10.0", "['r0far']"], default.stderr
    assert long.stdout.split() == ["3600.0", "[]"], long.stderr  # a minute of silence: not gone yet
    assert long.stderr == ""


@pytest.mark.parametrize("value", ["abc", "1", "-5", "nan", "inf", ""])
def test_a_bad_silence_period_is_one_line_and_the_default(url: str, value: str) -> None:
    done = _interrupted(url, value)
    assert done.returncode == 0 and done.stdout.split() == ["10.0", "['r0far']"], done.stderr
    assert done.stderr.splitlines() == [f"ESCALATE_STALE_AFTER={value!r}: not a number of seconds of at least 4; 10 used"]


@pytest.mark.parametrize(("value", "read", "said"), [
    (None, "2.0", []), ("0.25", "0.25", []), ("0", "0.0", []),
    ("-1", "2.0", ["ESCALATE_PARK_AFTER='-1': not a number of seconds of at least 0; 2 used"])])
def test_a_workers_grace_before_parking_is_read_from_the_environment(value: str | None, read: str, said: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ESCALATE_PARK_AFTER"}
    if value is not None:
        env["ESCALATE_PARK_AFTER"] = value
    done = subprocess.run([sys.executable, "-c", "from engine.services.parking import PARK_AFTER; print(PARK_AFTER)"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert (done.stdout.strip(), done.stderr.splitlines()) == (read, said)


@pytest.mark.parametrize(("variable", "value", "read", "said"), [
    ("ESCALATE_PARK_LIVE_AFTER", None, "600.0", []), ("ESCALATE_PARK_LIVE_AFTER", "0.3", "0.3", []),
    ("ESCALATE_LIVE_WAITING", None, "8", []), ("ESCALATE_LIVE_WAITING", "0", "0", []),
    ("ESCALATE_LIVE_WAITING", "2.5", "8", ["ESCALATE_LIVE_WAITING='2.5': not a whole number of at least 0; 8 used"]),
    ("ESCALATE_LIVE_WAITING", "-1", "8", ["ESCALATE_LIVE_WAITING='-1': not a whole number of at least 0; 8 used"])])
def test_how_long_and_how_many_runs_a_process_holds_live_are_read_from_the_environment(
        variable: str, value: str | None, read: str, said: list[str]) -> None:
    """A run held live (a console, `run --wait`) parks after 10 minutes, or after PARK_AFTER once
    LIVE_WAITING others wait live in its process."""
    env = {k: v for k, v in os.environ.items() if k != variable}
    if value is not None:
        env[variable] = value
    name = "PARK_LIVE_AFTER" if variable == "ESCALATE_PARK_LIVE_AFTER" else "LIVE_WAITING"
    done = subprocess.run([sys.executable, "-c", f"from engine.services.parking import {name}; print({name})"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert (done.stdout.strip(), done.stderr.splitlines()) == (read, said)
