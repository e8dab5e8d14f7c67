"""The command line never writes a control sequence it was handed: file names, task and agent
names, agent text and input files that carry ESC, BEL, C1 controls, bidi overrides or bytes that
are not UTF-8 reach stderr (and check's and rules' stdout) as visible signs.

Real processes: the bytes a terminal would get are the bytes checked. `escalate run`'s stdout
is left out on purpose: it is the flow's result, as it is (the contract), for the caller's pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile_text import HOSTILE, forbidden_in_bytes

pytestmark = pytest.mark.slow

SHOWN = "␛]52;c;cHduZWQ=␇".encode()  # the OSC 52 sequence as stderr shows it

ASKS = 'prompt p: """x"""\nagent a:\n    instruction p\nflow main:\n    log "log: " + $input\n' \
       '    notify $input\n    return run agent a "go"\n'
FAILS = 'flow main:\n    fail "failed: " + $input\n'
BROKEN = f'flow main:\n    $x = "{HOSTILE}"\n    $y = run agent ghost\n'
QUESTION = json.dumps({"escalation": True, "reason": "architecture_decision", "question": f"q{HOSTILE}",
                       "options": [{"id": f"o{HOSTILE}", "label": f"l{HOSTILE}"}]})


def escalate(tmp: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """`escalate ARGV` in `tmp`, this checkout's code (arguments may hold lone surrogates: the
    OS gets the bytes they stand for)."""
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=tmp, capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def workflow(tmp: Path, source: str, script: str | None = None) -> Path:
    """A workflow file named with the hostile text (and a byte that is not UTF-8)."""
    path = tmp / f"w{HOSTILE}\udcff.sr"
    path.write_text(source)
    if script is not None:
        path.with_suffix(".yaml").write_text(script)
    return path


def assert_clean(done: subprocess.CompletedProcess[bytes], *, stdout: bool = False) -> None:
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    assert forbidden_in_bytes(done.stderr) == [], done.stderr
    assert SHOWN in done.stderr, done.stderr  # shown, not dropped
    if stdout:
        assert forbidden_in_bytes(done.stdout) == [], done.stdout


def test_run_waiting_on_a_human_names_file_task_and_question_safely(tmp_path: Path) -> None:
    """Exit 4: the message quotes the file, the task (its stem), the agent's question; the
    flow's `log` and `notify` lines quote the input."""
    path = workflow(tmp_path, ASKS, json.dumps({"agents": {"a": [QUESTION]}}))
    done = escalate(tmp_path, "run", str(path), "--script", str(path.with_suffix(".yaml")), "--input", f"i{HOSTILE}")
    assert done.returncode == 4, done.stderr
    assert_clean(done)
    assert done.stderr.count(SHOWN) >= 4  # log, notify, and the exit-4 line's file, task and question


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("failing flow", 1),
        ("compile error", 2),
        ("unknown flow", 2),
        ("missing file", 2),
        ("missing rules", 2),
        ("bad script", 2),
        ("bad answers", 2),
        ("unwritable events", 2),
        ("bad option", 2),
    ],
)
def test_run_errors_quote_hostile_names_safely(tmp_path: Path, case: str, code: int) -> None:
    path = workflow(tmp_path, BROKEN if case == "compile error" else FAILS)
    bad = tmp_path / f"x{HOSTILE}.yaml"
    argv = {
        "failing flow": [str(path), "--input", f"i{HOSTILE}"],
        "compile error": [str(path)],
        "unknown flow": [str(path), "--flow", f"f{HOSTILE}"],
        "missing file": [str(tmp_path / f"nope{HOSTILE}.sr")],
        "missing rules": [str(path), "--rules", str(bad)],
        "bad script": [str(path), "--script", str(bad)],
        "bad answers": [str(path), "--answers", str(bad)],
        "unwritable events": [str(path), "--events", str(tmp_path / f"no{HOSTILE}" / "e.jsonl")],
        "bad option": [str(path), f"--bogus{HOSTILE}"],
    }[case]
    if case in ("bad script", "bad answers"):
        bad.write_text("agents: [\n")  # a syntax error: the message names the file
    done = escalate(tmp_path, "run", *argv)
    assert done.returncode == code, done.stderr
    assert_clean(done)


def test_check_compile_and_rules_quote_hostile_names_safely(tmp_path: Path) -> None:
    path = workflow(tmp_path, BROKEN)
    check = escalate(tmp_path, "check", str(path))
    assert check.returncode == 1 and SHOWN in check.stdout
    assert forbidden_in_bytes(check.stdout) == [], check.stdout  # the diagnostics go to stdout
    compiled = escalate(tmp_path, "compile", str(path))
    assert compiled.returncode == 1
    assert_clean(compiled)
    rules = tmp_path / f"r{HOSTILE}.yaml"
    rules.write_text("escalationRules:\n  global: 3\n")
    for argv, code in ((["rules", "check", str(rules)], 1), (["rules", "check", str(tmp_path / f"none{HOSTILE}.yaml")], 2)):
        done = escalate(tmp_path, *argv)
        assert done.returncode == code
        assert_clean(done)
    rules.write_text("escalationRules: {}\n")
    valid = escalate(tmp_path, "rules", "check", str(rules))
    assert valid.returncode == 0 and SHOWN in valid.stdout
    assert forbidden_in_bytes(valid.stdout) == [], valid.stdout


def test_console_usage_errors_quote_hostile_names_safely(tmp_path: Path) -> None:
    """Checked before the console opens: one line on stderr, exit 2."""
    for argv in ([str(tmp_path / f"nope{HOSTILE}.sr")], [str(workflow(tmp_path, BROKEN))]):
        done = escalate(tmp_path, "console", *argv)
        assert done.returncode == 2, done.stderr
        assert_clean(done)
