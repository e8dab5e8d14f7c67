"""The shell path as a newcomer walks it (issue 27, items 7 and 8): the commands printed by
`run` (exit 4), `runs` and `run --wait` are pasted as they are and work; a run left waiting for
a person says `waiting`; a mistyped `--db` is refused by the commands that only read or decide."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).parents[2] / "engine" / "demo"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def escalate(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


def pasted(line: str, choice: str) -> list[str]:
    """A printed `escalate ...` command as a person pastes it, picking `choice` for `a|b`."""
    words = shlex.split(line.strip().split(": ", 1)[-1].strip())
    assert words[0] == "escalate", line
    return [choice if "|" in word else word for word in words[1:]]


def test_exit_4_and_runs_print_commands_that_work_when_pasted(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'state' / 'runs.db'}"
    first = escalate(tmp_path, "run", str(DEMO / "auth-refactor.sr"), "--input", "Fix login", "--db", db)
    assert first.returncode == 4, first.stderr
    run_id = first.stderr.splitlines()[0].removeprefix("run ")
    answer_line = next(line for line in first.stderr.splitlines() if "escalate answer" in line)
    resume_line = next(line for line in first.stderr.splitlines() if "escalate resume" in line)
    assert f"--option jwt|sessions --db {db}" in answer_line
    assert resume_line.strip().endswith(f"escalate resume {run_id} --db {db}")

    text = escalate(tmp_path, "runs", "--db", db)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].split()[:2] == [run_id, "waiting"]
    assert answer_line.split(": ", 1)[1].strip() in text.stdout and f"escalate resume {run_id}" in text.stdout
    (run,) = json.loads(escalate(tmp_path, "runs", "--db", db, "--format", "json").stdout)
    assert run["status"] == "waiting"
    (esc,) = run["pending"]
    assert esc["options"] == ["jwt", "sessions"]
    assert esc["answer"] == f"escalate answer {esc['id']} --option jwt|sessions --db {db}"

    answered = escalate(tmp_path, *pasted(esc["answer"], "sessions"))
    assert answered.returncode == 0, answered.stderr
    resumed = escalate(tmp_path, *pasted(run["resume"], ""))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(escalate(tmp_path, "runs", "--db", db, "--all", "--format", "json").stdout)[0]["status"] == "done"


def test_run_wait_prints_the_answer_command_with_the_option_ids(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    waiting = subprocess.Popen([sys.executable, "-m", "engine", "run", str(DEMO / "auth-refactor.sr"), "--wait", "--db", db],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while "escalate answer" not in line:  # stderr, line by line, until the command is printed
            line = waiting.stderr.readline()
            assert line, "the run ended without printing how to answer"
        assert "--option jwt|sessions" in line
        answered = escalate(tmp_path, *pasted(line, "jwt"))
        assert answered.returncode == 0, answered.stderr
        out, _ = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 0 and out.startswith("Plan: move auth to JWT")


@pytest.mark.parametrize("argv", [["runs"], ["runs", "--format", "json"], ["answer", "r1.2", "--skip"], ["resume", "r1"]])
def test_a_database_that_does_not_exist_is_refused_not_created(tmp_path, argv) -> None:
    missing = tmp_path / "typo" / "escalte.db"
    done = escalate(tmp_path, *argv, "--db", f"sqlite:///{missing}")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and str(missing) in done.stderr and "no such database" in done.stderr
    assert not missing.exists() and not missing.parent.exists()


def test_a_command_that_starts_runs_creates_its_database(tmp_path) -> None:
    fresh = tmp_path / "new" / "runs.db"
    started = escalate(tmp_path, "run", str(DEMO / "resolver.sr"), "--input", "hello", "--db", f"sqlite:///{fresh}")
    assert started.returncode == 0, started.stderr
    assert fresh.is_file()
    listed = escalate(tmp_path, "runs", "--all", "--db", f"sqlite:///{fresh}", "--format", "json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["status"] == "done"
