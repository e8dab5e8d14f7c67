"""`escalate run --agent "CMD ARGS"` as a user runs it: real processes, a real SQLite database,
the permission answered from another process with `escalate answer` (this one: what `runs` and
`answer` say and return is read here, tests/cli_here.py; the run is what is tested)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from tests.acp.conftest import agent_command
from tests.cli_here import escalate_here

ENGINE = [sys.executable, "-m", "engine"]
OPTIONS = [["allow-1", "Allow once", "allow_once"], ["allow-all", "Always", "allow_always"],
           ["no-1", "Reject", "reject_once"]]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def _script(tmp: Path, turns: list) -> str:
    path = tmp / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return agent_command(path)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*ENGINE, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120)


def test_a_plain_agent_run_prints_its_reply(tmp_path: Path) -> None:
    command = _script(tmp_path, [[{"say": "all done"}]])
    result = _cli("run", "--agent", command, "--input", "go", "--db", f"sqlite:///{tmp_path / 'e.db'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "all done\n"
    assert "ACP agent" in result.stderr and "Traceback" not in result.stderr
    assert list((tmp_path / ".escalate" / "acp").glob("python*.sr"))  # the workflow a resume compiles again


@pytest.mark.parametrize(("args", "said"), [
    ([], "give a workflow FILE.sr or --agent"),
    (["wf.sr", "--agent", "x"], "give a workflow FILE.sr or --agent"),
    (["--agent", "gemini 'unclosed"], "--agent: the ACP command cannot be split into words (no closing quotation)"),
    (["--agent", "   "], "--agent: the ACP command is empty"),
    (["--agent", "gemini", "--script", "s.yaml"], "--agent: --script applies to a workflow"),
])
def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path, args: list[str], said: str) -> None:
    result = _cli("run", *args, cwd=tmp_path)
    assert result.returncode == 2
    assert said in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_agent_that_is_not_installed_exits_1_with_one_line(tmp_path: Path) -> None:
    result = _cli("run", "--agent", "no-such-acp-agent-xyz", "--db", f"sqlite:///{tmp_path / 'e.db'}", cwd=tmp_path)
    assert result.returncode == 1
    assert "ACP agent 'main' (no-such-acp-agent-xyz): not installed" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("flag", "outcome"), [(["--option", "allow-all"], "allow-all"), (["--approve"], "allow-1"),
                                               (["--deny"], "no-1")])
def test_a_permission_answered_from_the_shell(tmp_path: Path, flag: list[str], outcome: str) -> None:
    db = f"sqlite:///{tmp_path / 'e.db'}"
    command = _script(tmp_path, [[{"permission": {"title": "npm publish", "raw_input": {"command": "npm publish"},
                                                  "options": OPTIONS}}]])
    run = subprocess.Popen([*ENGINE, "run", "--agent", command, "--input", "ship it", "--wait", "--db", db,
                            "--rules", str(_rules(tmp_path))], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        pending = _pending(tmp_path, db)
        assert pending["question"] == "Allow main to run: npm publish?"
        answered = escalate_here("answer", pending["id"], *flag, "--db", db, cwd=tmp_path)
        assert answered.returncode == 0, answered.stderr
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 0, err
    assert out.strip() == f"outcome: {outcome}"
    if outcome == "allow-all":  # taught: the rules file now allows exactly this call
        assert "npm publish" in _rules(tmp_path).read_text()


def _rules(tmp: Path) -> Path:
    path = tmp / "rules.yaml"
    if not path.exists():
        path.write_text("escalationRules:\n  global: []\n")
    return path


def _any_pending(db: str) -> bool:
    """A pending escalation in a SQLite database, read directly (cheaper than `escalate runs`,
    polled)."""
    file = Path(db.removeprefix("sqlite:///"))
    if not db.startswith("sqlite:///") or not file.exists():
        return not db.startswith("sqlite:///")  # another database: asked through the command
    try:
        with closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True, timeout=5)) as conn:
            return conn.execute("SELECT 1 FROM escalate_escalations WHERE status = 'pending'").fetchone() is not None
    except sqlite3.OperationalError:  # its tables not made yet
        return False


def _pending(tmp: Path, db: str) -> dict:
    """The first pending escalation as `escalate runs --format json` lists it."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if not _any_pending(db):
            time.sleep(0.05)
            continue
        listed = escalate_here("runs", "--db", db, "--format", "json", cwd=tmp)
        if listed.returncode == 0:
            for run in json.loads(listed.stdout or "[]"):
                if run["pending"]:
                    return run["pending"][0]
        time.sleep(0.2)
    raise AssertionError("no pending escalation")


def test_console_and_serve_take_acp_agents_as_workflows(tmp_path: Path) -> None:
    import argparse

    from engine.cli.parser import build_parser
    from engine.cli.serve_cmd import console_command

    bad = _cli("console", "--agent", "gemini 'unclosed", cwd=tmp_path)
    assert bad.returncode == 2 and "--agent: the ACP command cannot be split" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    args = build_parser().parse_args(["serve", "--agent", "gemini --experimental-acp", "--agent", "goose acp"])
    assert isinstance(args, argparse.Namespace)
    command = console_command(args, first=True)
    assert command[command.index("console") + 1:] == ["--agent", "gemini --experimental-acp", "--agent", "goose acp"]
