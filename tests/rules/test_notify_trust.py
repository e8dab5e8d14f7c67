"""A workspace rules file (`.escalate/rules.yaml`, picked up when --rules is not given) comes with
the folder: its `notify` command runs only once the person trusted the file's exact content."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.trusted import trust_rules
from rules.loader import load_layered
from tests.cli_here import escalate_here

DEMO = Path(__file__).parents[2] / "engine" / "demo"


def workspace_file(tmp_path: Path, marker: Path) -> Path:
    path = tmp_path / ".escalate" / "rules.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"notify:\n  command: [{sys.executable}, -c, \"open('{marker}', 'w')\"]\n"
                    "escalationRules:\n  global:\n    - {pattern: 'rm -rf', action: deny}\n")
    return path


def test_an_untrusted_workspace_file_keeps_its_rules_but_not_its_command(tmp_path, caplog) -> None:
    path = workspace_file(tmp_path, tmp_path / "NOTIFIED")
    rules = load_layered(None, workspace=tmp_path)
    assert rules.notify is None
    assert any(r.pattern.source == "rm -rf" for r in rules.global_rules)  # its rules still apply
    assert f"escalate rules trust {path}" in caplog.text
    trust_rules(path)
    assert load_layered(None, workspace=tmp_path).notify is not None
    path.write_text(path.read_text().replace("'w'", "'a'"))  # changed: trusted no longer
    assert load_layered(None, workspace=tmp_path).notify is None


def test_an_explicit_rules_file_is_the_persons_choice(tmp_path) -> None:
    path = workspace_file(tmp_path, tmp_path / "NOTIFIED")
    assert load_layered(path).notify is not None


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_run_in_a_cloned_folder_names_the_command_then_the_person_trusts_it(tmp_path) -> None:
    marker = tmp_path / "NOTIFIED"
    workspace_file(tmp_path, marker)
    # What the run and `rules trust` say and do, not their processes: run here (tests/cli_here.py).
    run = escalate_here("run", str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"),
                        "--input", "Fix login", cwd=tmp_path)
    assert run.returncode == 4, run.stderr
    assert "notify command" in run.stderr and "escalate rules trust" in run.stderr
    assert not marker.exists()
    trust = escalate_here("rules", "trust", ".escalate/rules.yaml", cwd=tmp_path)
    assert trust.returncode == 0 and "may run" in trust.stdout, trust.stderr
    assert load_layered(None, workspace=tmp_path).notify is not None
