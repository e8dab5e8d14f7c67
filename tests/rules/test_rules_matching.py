import subprocess
import sys
from pathlib import Path

import pytest

from engine.kernel.model import Escalation, OnTimeout, Option, Origin, Reason
from rules import Action, default_rules, parse_rules
from rules.matcher import Activity, Pattern

RULES = parse_rules(
    """\
escalationRules:
  global:
    - {pattern: "breaking change", action: ask_user}
    - {pattern: "delete file", action: ask_user}
    - {pattern: "re:^run_command command: git push", action: deny}
    - {pattern: "drop table", action: stop}
    - {pattern: "format", action: allow}
  taskOverrides:
    deploy-production:
      alwaysAsk: true
      requireConfirmation: true
      rules:
        - {pattern: "format", action: deny}
    quick:
      rules:
        - {pattern: "delete", action: allow, timeout: 5}
  defaults:
    cost_warning:          {timeout: 300, onTimeout: continue}
    test_failure:          {timeout: 60, onTimeout: stop}
    file_conflict:         {timeout: 10, onTimeout: "option:mine"}
    breaking_change:       {onTimeout: recommended}
    architecture_decision: {onTimeout: wait}
""",
    "r.yaml",
)


def esc(reason: Reason = Reason.OTHER, question: str = "q", context: str = "", task: str = "t", **kw) -> Escalation:
    return Escalation(id="e", task_id=task, run_id="r", agent="a", reason=reason, question=question, context=context, **kw)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("breaking change", "This is a BREAKING CHANGE", True),
        ("breaking change", "breaking_change", True),
        ("breaking change", "breaking-change", True),
        ("breaking_change", "a breaking  change", True),
        ("delete file", "delete_file path: old.txt", True),
        ("delete file", "deleted the file", False),
        ("modify .env", "please MODIFY .ENV now", True),
        ("modify .env", "modify env", False),
        ("re:npm\\s+publish", "NPM   publish --tag next", True),
        ("re:^rm ", "please rm -rf", False),
        ("re:delete_file", "delete file", False),  # a regex sees the raw text
    ],
)
def test_pattern_semantics(pattern: str, text: str, expected: bool) -> None:
    assert Pattern(pattern).matches(Activity(text)) is expected


def test_escalation_text_is_reason_question_and_context() -> None:
    assert RULES.match_escalation(esc(Reason.BREAKING_CHANGE)).pattern.source == "breaking change"
    assert RULES.match_escalation(esc(question="Should I delete file a.txt?")).pattern.source == "delete file"
    assert RULES.match_escalation(esc(context="we will drop table users")).action is Action.STOP
    assert RULES.match_escalation(esc(question="nothing special")) is None


def test_tool_text_is_name_and_args() -> None:
    assert RULES.match_tool("t", "delete_file", {"path": "old.txt"}).action is Action.ASK_USER
    assert RULES.match_tool("t", "run_command", {"command": "git push origin"}).action is Action.DENY
    assert RULES.match_tool("t", "run_command", {"command": "echo git push"}) is None
    assert RULES.match_tool("t", "write_file", {"path": "x", "content": {"nested": "drop table"}}).action is Action.STOP
    assert RULES.match_tool("t", "read_file", {"path": "a"}) is None


def test_first_match_wins_and_task_override_rules_come_first() -> None:
    # "format the breaking change" matches both global rules; the earlier one wins
    assert RULES.match_escalation(esc(question="breaking change format")).action is Action.ASK_USER
    assert RULES.match_escalation(esc(question="format code")).action is Action.ALLOW
    assert RULES.match_escalation(esc(question="format code", task="deploy-production")).action is Action.DENY
    # task names match ignoring case, '_' and '-'
    assert RULES.match_escalation(esc(question="format code", task="Deploy_Production")).action is Action.DENY
    assert RULES.override("deploy_production").require_confirmation
    assert RULES.match_tool("quick", "delete_file", {"path": "x"}).action is Action.ALLOW
    assert RULES.override("other") is None


def test_timeout_policy_per_reason() -> None:
    p = RULES.timeout_policy(esc(Reason.COST_WARNING), now=100)
    assert (p.deadline, p.on_timeout, p.timeout_seconds) == (400, OnTimeout.CONTINUE, 300)
    p = RULES.timeout_policy(esc(Reason.TEST_FAILURE, timeout=5), now=100)
    assert (p.deadline, p.on_timeout) == (105, OnTimeout.STOP)  # the escalation's own timeout wins
    p = RULES.timeout_policy(esc(Reason.FILE_CONFLICT), now=0)
    assert (p.deadline, p.on_timeout, p.option_id, p.describe()) == (10, OnTimeout.OPTION, "mine", "option mine")
    p = RULES.timeout_policy(esc(Reason.BREAKING_CHANGE), now=0)
    assert (p.deadline, p.on_timeout) == (300, OnTimeout.RECOMMENDED)  # no timeout given: 300 s
    p = RULES.timeout_policy(esc(Reason.TEST_FAILURE, allow_agent_decision=True), now=0)
    assert (p.deadline, p.on_timeout) == (60, OnTimeout.AGENT_DECIDE)


def test_wait_reasons_missing_reasons_and_always_ask_have_no_deadline() -> None:
    assert RULES.timeout_policy(esc(Reason.ARCHITECTURE_DECISION, timeout=120, allow_agent_decision=True), 0).deadline is None
    assert RULES.timeout_policy(esc(Reason.SECURITY_CONCERN, timeout=120), 0).deadline is None
    p = RULES.timeout_policy(esc(Reason.COST_WARNING, task="deploy-production", timeout=1), 0)
    assert p.deadline is None and p.on_timeout is OnTimeout.WAIT


def test_rule_timeout_and_tool_approvals() -> None:
    rule = RULES.match_tool("quick", "delete_file", {})
    approval = esc(Reason.SECURITY_CONCERN, origin=Origin.TOOL_APPROVAL, options=(Option("approve", "A"), Option("deny", "D")))
    p = RULES.timeout_policy(approval, 0, rule)
    assert (p.deadline, p.on_timeout, p.option_id) == (5, OnTimeout.OPTION, "deny")
    assert RULES.timeout_policy(approval, 0).deadline is None  # no timeout anywhere: a human decides
    p = RULES.timeout_policy(esc(Reason.TEST_FAILURE), 0, rule)
    assert p.deadline == 5  # the rule's timeout beats the reason's


def test_default_rules_route_seed_004_tools_to_a_human() -> None:
    rules = default_rules()
    assert rules.match_tool("t", "delete_file", {"path": "a"}).action is Action.ASK_USER
    assert rules.match_tool("t", "run_command", {"command": "npm publish"}).action is Action.ASK_USER
    assert rules.match_tool("t", "list_directory", {"path": "."}) is None


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_rules_check_command_exit_codes(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("escalationRules:\n  global:\n    - {pattern: x, action: allow}\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("escalationRules:\n  global:\n    - {pattern: x, action: never}\n")
    ok = _cli("rules", "check", "good.yaml", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stdout.startswith("good.yaml: ok: 1 global rule, ")
    invalid = _cli("rules", "check", "bad.yaml", cwd=tmp_path)
    assert invalid.returncode == 1
    assert invalid.stderr.startswith("bad.yaml:3:28: global rule 1: unknown action 'never'")
    assert "Traceback" not in invalid.stderr
    missing = _cli("rules", "check", "missing.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "missing.yaml" in missing.stderr and "Traceback" not in missing.stderr
