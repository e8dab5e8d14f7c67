"""Issue 4 through the real command: `escalate run --answers`, exit codes 3 and 4, events."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_support import ONE_AGENT

pytestmark = pytest.mark.slow

SCRIPT = """\
agents:
  helper:
    - escalate:
        reason: {reason}
        question: "First question?"
        options: [{{id: a, label: "A"}}, {{id: b, label: "B"}}]
    - escalate:
        reason: cost_warning
        question: "Budget at 90%, go on?"
    - text: "done after deciding myself"
      when: "Decide yourself"
    - "done"
"""


def run(tmp: Path, reason: str, answers: str | None, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    (tmp / "flow.sr").write_text(ONE_AGENT)
    (tmp / "s.yaml").write_text(SCRIPT.format(reason=reason))
    args = [sys.executable, "-m", "engine", "run", "flow.sr", "--script", "s.yaml", "--events", "e.jsonl", *extra]
    if answers is not None:
        (tmp / "a.yaml").write_text(answers)
        args += ["--answers", "a.yaml"]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=tmp, timeout=120)
    events_file = tmp / "e.jsonl"
    events = [json.loads(line) for line in events_file.read_text().splitlines()] if events_file.exists() else []
    return proc, events


def test_answers_in_order_then_timeout_default_exit_0(tmp_path: Path) -> None:
    proc, events = run(tmp_path, "architecture_decision", "- {responseType: option, selectedOption: b}\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done after deciding myself\n"
    decisions = [e for e in events if e["type"] == "decision"]
    assert [(d["responseType"], d["resolvedBy"]) for d in decisions] == [
        ("option", "answers_file"),  # the 1st escalation got the 1st answer
        ("agent_decide", "timeout_default"),  # used up: cost_warning's `continue` at once
    ]
    assert decisions[0]["selectedOption"] == "b"
    assert all("Traceback" not in line for line in proc.stderr.splitlines())


def test_stop_default_exits_3(tmp_path: Path) -> None:
    proc, events = run(tmp_path, "test_failure", None)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""
    assert [e["resolvedBy"] for e in events if e["type"] == "decision"] == ["timeout_default"]
    assert "Traceback" not in proc.stderr


def test_waiting_on_a_human_exits_4_naming_the_escalation(tmp_path: Path) -> None:
    proc, events = run(tmp_path, "architecture_decision", None, "--task", "deploy")
    assert proc.returncode == 4, proc.stderr
    [raised] = [e for e in events if e["type"] == "human_escalation"]
    assert raised["taskId"] == "deploy" and raised["timeout"] is None and raised["onTimeout"] == "wait"
    assert raised["id"] in proc.stderr and "First question?" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_answers_file_is_a_usage_error_with_position(tmp_path: Path) -> None:
    proc, _ = run(tmp_path, "architecture_decision", "- responseType: option\n  selectedOption: [b]\n")
    assert proc.returncode == 2
    assert proc.stderr.startswith("a.yaml:2:19: answer 1: selectedOption must be a string")
