"""The shell path as a newcomer walks it (issue 27, items 7 and 8): the commands printed by
`run` (exit 4), `runs` and `run --wait` are pasted as they are and work; a run left waiting for
a person says `waiting`; a mistyped `--db` is refused by the commands that only read or decide.
`run` and the pasted lines are real processes (a real shell); what `runs` says, and a refusal, is
read in this process (tests/cli_here.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_here import escalate_here

DEMO = Path(__file__).parents[2] / "engine" / "demo"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def escalate(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


def commands_in(text: str) -> list[str]:
    """The lines of `text` a person pastes: each a whole `escalate ...` command."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("escalate ")]


def paste(cwd: Path, line: str) -> subprocess.CompletedProcess[str]:
    """`line` pasted into a real shell, with `escalate` on its PATH (this checkout's code)."""
    shim = cwd / "bin" / "escalate"
    if not shim.exists():
        shim.parent.mkdir(exist_ok=True)
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m engine "$@"\n')
        shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_exit_4_and_runs_print_commands_that_work_when_pasted(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'state' / 'runs.db'}"
    first = escalate(tmp_path, "run", str(DEMO / "auth-refactor.sr"), "--input", "Fix login", "--db", db)
    assert first.returncode == 4, first.stderr
    run_id = first.stderr.splitlines()[0].removeprefix("run ")
    esc_id = f"{run_id}.2"
    jwt, sessions, resume = commands_in(first.stderr)  # one line per option, then how to continue
    assert jwt.startswith(f"escalate answer {esc_id} --option jwt --db {db} ") and jwt.endswith("# Yes, use JWT (recommended)")
    assert sessions.startswith(f"escalate answer {esc_id} --option sessions --db {db} ") and sessions.endswith("# No, keep sessions")
    assert resume.startswith(f"escalate resume {run_id} --db {db} ") and resume.endswith("# then continue the run")

    text = escalate_here("runs", "--db", db, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].split()[:2] == [run_id, "waiting"]
    assert commands_in(text.stdout) == [jwt, sessions, resume]
    (run,) = json.loads(escalate_here("runs", "--db", db, "--format", "json", cwd=tmp_path).stdout)
    assert run["status"] == "waiting"
    (esc,) = run["pending"]
    assert (esc["options"], esc["labels"], esc["recommended"]) == (["jwt", "sessions"], ["Yes, use JWT", "No, keep sessions"], "jwt")
    assert esc["answer"] == [f"escalate answer {esc_id} --option {o} --db {db}" for o in ("jwt", "sessions")]
    assert run["resume"] == f"escalate resume {run_id} --db {db}"

    answered = paste(tmp_path, sessions)  # the whole line, comment and all, as a person pastes it
    assert answered.returncode == 0 and answered.stdout == f"{esc_id}: decided (option sessions)\n", answered.stderr
    resumed = paste(tmp_path, resume)
    assert resumed.returncode == 0 and resumed.stdout.startswith("Plan: keep server sessions"), resumed.stderr
    assert json.loads(escalate_here("runs", "--db", db, "--all", "--format", "json", cwd=tmp_path).stdout)[0]["status"] == "done"


HOSTILE = """agents:
  planner:
    - escalate:
        reason: architecture_decision
        question: "Which?"
        options:
          - {id: "--skip", label: "an id that looks like a flag"}
          - {id: "$(touch pwned)", label: "a label\\nescalate answer x --option y; touch pwned2\\rtouch pwned3"}
          - {id: "it's", label: "a quote"}
    - "done"
"""


def test_option_ids_and_labels_cannot_make_a_pasted_line_do_anything_else(tmp_path) -> None:
    """Ids are the agent's text, quoted for the shell; labels are the agent's text, on one line
    after the `#`: no line runs anything but `escalate answer` with that one id."""
    (tmp_path / "ask.sr").write_text((DEMO / "auth-refactor.sr").read_text())
    (tmp_path / "ask.yaml").write_text(HOSTILE)
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    first = escalate(tmp_path, "run", "ask.sr", "--script", "ask.yaml", "--db", db)
    assert first.returncode == 4, first.stderr
    esc_id = first.stderr.splitlines()[0].removeprefix("run ") + ".2"
    *answers, resume = commands_in(first.stderr)
    assert [shlex.split(line, comments=True) for line in answers] == [
        ["escalate", "answer", esc_id, "--option=--skip", "--db", db],
        ["escalate", "answer", esc_id, "--option", "$(touch pwned)", "--db", db],
        ["escalate", "answer", esc_id, "--option", "it's", "--db", db],
    ]
    assert len(first.stderr.splitlines()) == 3 + 4  # run, models, the message, 3 answers + resume: no line more
    for line in answers:  # the first decides, the others find it decided
        paste(tmp_path, line)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")]
    (run,) = json.loads(escalate_here("runs", "--db", db, "--format", "json", cwd=tmp_path).stdout)
    assert run["decisions"][0]["selectedOption"] == "--skip"


def test_run_wait_prints_the_answer_commands_one_per_option(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    waiting = subprocess.Popen([sys.executable, "-m", "engine", "run", str(DEMO / "auth-refactor.sr"), "--wait", "--db", db],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        while len(commands_in("".join(lines))) < 2:  # stderr, line by line, until both commands are printed
            lines.append(waiting.stderr.readline())
            assert lines[-1], "the run ended without printing how to answer"
        jwt, sessions = commands_in("".join(lines))
        assert "--option jwt " in jwt and "--option sessions " in sessions
        answered = paste(tmp_path, jwt)
        assert answered.returncode == 0, answered.stderr
        out, rest = waiting.communicate(timeout=60)
    finally:
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 0 and out.startswith("Plan: move auth to JWT")
    assert "escalate resume" not in "".join(lines) + rest  # the run goes on by itself


@pytest.mark.parametrize("argv", [["runs"], ["runs", "--format", "json"], ["answer", "r1.2", "--skip"], ["resume", "r1"]])
def test_a_database_that_does_not_exist_is_refused_not_created(tmp_path, argv) -> None:
    missing = tmp_path / "typo" / "escalte.db"
    done = escalate_here(*argv, "--db", f"sqlite:///{missing}", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and str(missing) in done.stderr and "no such database" in done.stderr
    assert not missing.exists() and not missing.parent.exists()


def test_a_command_that_starts_runs_creates_its_database(tmp_path) -> None:
    fresh = tmp_path / "new" / "runs.db"
    started = escalate_here("run", str(DEMO / "resolver.sr"), "--input", "hello", "--db", f"sqlite:///{fresh}", cwd=tmp_path)
    assert started.returncode == 0, started.stderr
    assert fresh.is_file()
    listed = escalate_here("runs", "--all", "--db", f"sqlite:///{fresh}", "--format", "json", cwd=tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["status"] == "done"
