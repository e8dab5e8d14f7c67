"""Taught rules: exact-match safety, precedence (a taught allow never beats a written deny or
alwaysAsk), the round-trip edit of the rules file, and the workspace layer."""

from pathlib import Path

import pytest

from engine.escalation.desk import EscalationDesk, Gate
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import FakeClock
from rules.loader import load_layered, load_rules, parse_rules
from rules.model import Action
from rules.book import RuleBook
from rules.teach import TeachError, add_rule, remove_rule, tool_pattern

SHELL = "run_command"


def _rules(text: str) -> object:
    return parse_rules(text, "r.yaml")


def _verdict(rules_text: str, task: str, tool: str, args: dict) -> Gate:
    return EscalationDesk(EscalationBroker(FakeClock()), _rules(rules_text), FakeClock()).tool_verdict(task, tool, args).gate


def _taught(task: str, tool: str, args: dict, action: str = "allow", extra: str = "") -> str:
    pattern = tool_pattern(tool, args).replace("'", "''")
    return f"""\
escalationRules:
  global:
    - {{pattern: "rm -rf", action: ask_user}}
{extra}  taskOverrides:
    {task}:
      requireConfirmation: true
      rules:
        - {{pattern: '{pattern}', action: {action}, taught: "t"}}
"""


@pytest.mark.parametrize("command, expected", [
    ("rm -rf build", Gate.ALLOW),
    ("rm -rf /", Gate.ASK),
    ("rm -rf build; rm -rf /", Gate.ASK),
    ("rm -rf build && rm -rf /", Gate.ASK),
    ("RM -RF BUILD", Gate.ASK),
    ("rm -rf build ", Gate.ASK),
    ("rm -rf buildx", Gate.ASK),
    ("rm -rf build\nrm -rf /", Gate.ASK),
])
def test_a_taught_allow_matches_exactly_that_call(command, expected) -> None:
    rules = _taught("t1", SHELL, {"command": "rm -rf build"})
    assert _verdict(rules, "t1", SHELL, {"command": command}) == expected


def test_a_taught_allow_is_scoped_to_its_task() -> None:
    rules = _taught("t1", SHELL, {"command": "rm -rf build"})
    assert _verdict(rules, "other", SHELL, {"command": "rm -rf build"}) == Gate.ASK


def test_a_taught_allow_never_overrides_a_written_deny() -> None:
    rules = _taught("t1", "write_file", {"path": "a"}, extra="    - {pattern: \"write file\", action: deny}\n")
    assert _verdict(rules, "t1", "write_file", {"path": "a"}) == Gate.DENY
    rules = _taught("t1", SHELL, {"command": "rm -rf build"}).replace("action: ask_user", "action: stop")
    assert _verdict(rules, "t1", SHELL, {"command": "rm -rf build"}) == "stop"


def test_a_taught_allow_never_overrides_always_ask() -> None:
    rules = _taught("t1", "write_file", {"path": "a"}).replace("requireConfirmation: true", "alwaysAsk: true\n      requireConfirmation: true")
    assert _verdict(rules, "t1", "write_file", {"path": "a"}) == Gate.ASK


def test_a_taught_deny_beats_a_written_allow() -> None:
    rules = _taught("t1", "write_file", {"path": "a"}, action="deny", extra="    - {pattern: \"write file\", action: allow}\n")
    assert _verdict(rules, "t1", "write_file", {"path": "a"}) == Gate.DENY


COMMENTED = """\
# my rules: keep this comment
escalationRules:
  global:                     # checked in order
    - pattern: "npm publish"  # ask before publishing
      action: ask_user
  taskOverrides:
    deploy_production:
      requireConfirmation: true   # every call
  defaults:
    test_failure: {timeout: 60, onTimeout: stop}
"""


def test_adding_a_rule_keeps_comments_order_and_loads(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(COMMENTED)
    pattern = tool_pattern("write_file", {"path": "RELEASED.txt", "content": "v1 'quoted' \"x\"\n"})
    rule = add_rule(path, "deploy-production", pattern, Action.ALLOW, "2026 from esc-1")
    text = path.read_text()
    for kept in ("# my rules: keep this comment", "# checked in order", "# ask before publishing", "# every call",
                 "test_failure: {timeout: 60, onTimeout: stop}"):
        assert kept in text
    assert text.index("global") < text.index("taskOverrides") < text.index("defaults")
    assert "deploy-production" not in text  # added to the override of the same task, as it is spelled there
    rules = load_rules(path)  # re-validates with the loader
    [written] = rules.override("deploy-production").rules
    assert (written.line, written.pattern.source, written.taught) == (rule.line, pattern, "2026 from esc-1")
    assert written.file == str(path) and text.splitlines()[written.line - 1].lstrip().startswith("- pattern:")
    remove_rule(path, written)
    assert path.read_text() == COMMENTED.replace("requireConfirmation: true   # every call",
                                                 "requireConfirmation: true   # every call\n      rules: []")


def test_a_file_the_loader_refuses_is_not_edited(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("escalationRules:\n  global: 3\n")
    with pytest.raises(TeachError, match="rules.yaml:2:11"):
        add_rule(path, "t", "x", Action.ALLOW, "t")
    assert path.read_text() == "escalationRules:\n  global: 3\n"


def test_the_workspace_file_is_layered_over_the_base(tmp_path: Path) -> None:
    book = RuleBook(workspace=tmp_path)
    assert book.target == tmp_path / ".escalate" / "rules.yaml"
    before = book.load()
    add_rule(book.target, "t1", tool_pattern("write_file", {"path": "a"}), Action.ALLOW, "t")
    after = load_layered(None, None, tmp_path)
    assert after.global_rules == before.global_rules  # the shipped rules are kept, not replaced
    assert after.defaults == before.defaults and after.policy == before.policy
    assert [r.taught for r in after.override("t1").rules] == ["t"]
    demo = Path(__file__).resolve().parents[2] / "engine" / "demo" / "rules.yaml"
    over_demo = load_layered(None, demo, tmp_path)
    assert over_demo.override("deploy-production").always_ask  # the demo's override is still there
