"""A durable run's token count survives a stop and a resume: it is rebuilt from the recorded
model turns (neither doubled nor reset), and the cost_warning decided before is not asked again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.cli_here import escalate_here
from tests.models.test_budgets import THREE_CALLS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

FLOW = THREE_CALLS

SCRIPT = """
agents:
  main:
    - {text: one, usage: {input: 500, output: 100}}
    - {text: two, usage: {input: 200, output: 100}}
    - escalate: {reason: architecture_decision, question: "JWT?", options: [{id: opt1, label: "Yes"}]}
    - {text: done, usage: {input: 40, output: 10}}
"""


def escalate(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True, timeout=240)


def test_tokens_and_the_warning_survive_resume(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ESCALATE_DB", raising=False)
    (tmp_path / "wf.sr").write_text(FLOW)
    (tmp_path / "s.yaml").write_text(SCRIPT)
    (tmp_path / "r.yaml").write_text("escalationRules:\n  budgets:\n    default: {tokens: 1000, warnAt: 0.5}\n")
    (tmp_path / "a.yaml").write_text("- {responseType: option, selectedOption: continue}\n")
    first = escalate(tmp_path, "run", "wf.sr", "--script", "s.yaml", "--rules", "r.yaml", "--answers", "a.yaml")
    assert first.returncode == 4, first.stderr  # waits for a person on the architecture decision
    run_id = first.stderr.splitlines()[0].removeprefix("run ")
    (listed,) = json.loads(escalate_here("runs", "--format", "json", cwd=tmp_path).stdout)  # read here: the run is what is tested
    assert listed["tokens"] == 900
    (waiting,) = listed["pending"]
    assert escalate_here("answer", waiting["id"], "--option", "opt1", cwd=tmp_path).returncode == 0
    resumed = escalate(tmp_path, "resume", run_id)
    assert resumed.returncode == 0, resumed.stderr  # a doubled count (1,800) would have stopped it
    assert resumed.stdout == "done\n"
    (listed,) = json.loads(escalate_here("runs", "--all", "--format", "json", cwd=tmp_path).stdout)
    assert listed["tokens"] == 950
    db = Database(f"sqlite:///{tmp_path / '.escalate' / 'escalate.db'}")
    try:
        reasons = [e["payload"]["escalation"]["reason"] for e in db.escalations_of(run_id)]
    finally:
        db.close()
    assert reasons == ["cost_warning", "architecture_decision"]  # the warning was asked once
