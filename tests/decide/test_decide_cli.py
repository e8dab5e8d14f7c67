"""Edited approvals are durable: a decision with edited arguments, given from another process
while the run's process is gone, is what the continued run's tool uses; `escalate runs --all
--format json` shows every decision's audit."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.cli_here import escalate_here
from tests.durable.test_cli import default_database, escalate, start, wait_for_pending  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

DEMO = Path(__file__).parents[2] / "engine" / "demo"
RULES = """\
escalationRules:
  taskOverrides:
    deploy-production:
      requireConfirmation: true
"""


def test_an_edited_approval_is_used_when_the_run_continues_after_a_kill(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(RULES)
    run = start(tmp_path, "run", str(DEMO / "deploy-production.sr"), "--script", str(DEMO / "deploy-production.yaml"),
                "--rules", "rules.yaml", "--input", "ship it", "--wait")
    try:
        row = wait_for_pending(tmp_path)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(30)
    assert row["payload"]["extra"]["args"]["path"] == "RELEASED.txt"
    # Answered from this process (tests/cli_here.py), the run's process gone.
    bad = escalate_here("answer", row["id"], "--approve", "--args", "[1, 2]", cwd=tmp_path)
    assert bad.returncode == 2 and "must be a JSON object" in bad.stderr
    edited = {"path": "STAGED.txt", "content": "staging only\n"}
    ok = escalate_here("answer", row["id"], "--approve", "--args", json.dumps(edited), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    resumed = escalate(tmp_path, "resume", row["run_id"])
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "STAGED.txt").read_text() == "staging only\n"
    assert not (tmp_path / "RELEASED.txt").exists()

    listed = json.loads(escalate_here("runs", "--all", "--format", "json", cwd=tmp_path).stdout)
    [decision] = listed[0]["decisions"]
    assert decision["id"] == row["id"] and decision["resolvedBy"] == "human" and decision["via"] == "escalate answer"
    assert decision["editedArgs"] == edited and decision["selectedOption"] == "approve"
    assert decision["args"] == {"path": "RELEASED.txt", "content": "journalowl-api v1.4.2 released to production\n"}
    assert decision["waitedSeconds"] >= 0 and decision["decidedAt"].endswith("Z") and decision["reason"] == "security_concern"


def test_run_loads_the_workspace_rules_by_default(tmp_path: Path) -> None:
    from rules.model import Action
    from rules.teach import add_rule, tool_pattern

    args = {"path": "RELEASED.txt", "content": "journalowl-api v1.4.2 released to production\n"}
    add_rule(tmp_path / ".escalate" / "rules.yaml", "deploy-production", tool_pattern("write_file", args), Action.DENY, "t")
    events = tmp_path / "events.jsonl"
    done = escalate(tmp_path, "run", str(DEMO / "deploy-production.sr"), "--script", str(DEMO / "deploy-production.yaml"),
                    "--input", "ship it", "--events", str(events))
    assert done.returncode == 0, done.stderr
    [call] = [json.loads(line) for line in events.read_text().splitlines() if '"tool_call"' in line]
    assert call["verdict"] == "denied"  # by the taught rule, without asking anyone
    assert not (tmp_path / "RELEASED.txt").exists()

    (tmp_path / ".escalate" / "rules.yaml").write_text("escalationRules:\n  global: 3\n")
    broken = escalate(tmp_path, "run", str(DEMO / "deploy-production.sr"), "--script", str(DEMO / "deploy-production.yaml"))
    assert broken.returncode == 2 and ".escalate/rules.yaml:2:11" in broken.stderr and "Traceback" not in broken.stderr
