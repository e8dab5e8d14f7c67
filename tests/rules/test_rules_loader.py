import textwrap
from pathlib import Path

import pytest

from engine.kernel.model import OnTimeout, Reason
from rules import Action, RulesError, RulesUnreadable, default_rules, load_rules, parse_rules

GOOD = """\
escalationRules:
  global:
    - pattern: "breaking change"
      action: ask_user
    - pattern: "re:rm\\\\s+-rf"
      action: stop
  taskOverrides:
    deploy-production:
      alwaysAsk: true
      requireConfirmation: true
      rules:
        - {pattern: "drop table", action: deny, timeout: 30}
  defaults:
    cost_warning:          {timeout: 300, onTimeout: continue}
    test_failure:          {timeout: 60, onTimeout: stop}
    security_concern:      {onTimeout: "option:deny"}
    file_conflict:         {timeout: 10, onTimeout: recommended}
    dependency_issue:      {timeout: 0, onTimeout: agent_decide}
    architecture_decision: {onTimeout: wait}
policy:
  paths: {locator: [analyzer, pattern_finder]}
  fallbacks: {analyzer: [locator]}
  maxDepth: 3
  loopWindow: 300
  targetHints: {pattern: pattern_finder, analyze: analyzer}
"""


def test_contract_example_loads_into_the_model() -> None:
    rules = parse_rules(GOOD, "r.yaml")
    assert [(r.pattern.source, r.action) for r in rules.global_rules] == [
        ("breaking change", Action.ASK_USER),
        ("re:rm\\s+-rf", Action.STOP),
    ]
    assert rules.global_rules[1].line == 5 and rules.global_rules[1].column == 7
    override = rules.task_overrides["deploy-production"]
    assert override.always_ask and override.require_confirmation
    assert override.rules[0].action is Action.DENY and override.rules[0].timeout == 30
    assert rules.defaults[Reason.TEST_FAILURE].timeout == 60
    assert rules.defaults[Reason.SECURITY_CONCERN].on_timeout is OnTimeout.OPTION
    assert rules.defaults[Reason.SECURITY_CONCERN].option_id == "deny"
    assert rules.defaults[Reason.SECURITY_CONCERN].timeout == 300  # seed 004's five minutes
    assert rules.policy.paths == {"locator": ("analyzer", "pattern_finder")}
    assert rules.policy.max_depth == 3 and rules.policy.loop_window == 300
    assert list(rules.policy.target_hints) == ["pattern", "analyze"]


def test_shipped_defaults_hold_seed_004_and_002() -> None:
    rules = default_rules()
    assert [r.pattern.source for r in rules.global_rules] == ["breaking change", "delete file", "modify .env", "npm publish"]
    assert all(r.action is Action.ASK_USER for r in rules.global_rules)
    assert {r: d.on_timeout for r, d in rules.defaults.items()} == {
        Reason.COST_WARNING: OnTimeout.CONTINUE,
        Reason.TEST_FAILURE: OnTimeout.STOP,
        Reason.BREAKING_CHANGE: OnTimeout.STOP,
        Reason.UNCLEAR_REQUIREMENT: OnTimeout.STOP,
        Reason.ARCHITECTURE_DECISION: OnTimeout.WAIT,
    }
    assert all(d.timeout == 300 for d in rules.defaults.values())
    assert rules.policy.paths["codebase_locator"] == ("codebase_analyzer", "codebase_pattern_finder")
    assert rules.policy.fallbacks["codebase_pattern_finder"] == ("codebase_analyzer",)
    assert load_rules(None) is rules


def test_missing_sections_keep_shipped_defaults_present_ones_replace(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("escalationRules:\n  global: []\n")
    rules = load_rules(path)
    assert rules.global_rules == ()
    assert rules.defaults == default_rules().defaults
    assert rules.policy == default_rules().policy
    assert rules.source == str(path)
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    assert load_rules(empty).global_rules == default_rules().global_rules


BAD = [
    # (yaml, line, column, message fragment)
    ("escalationRules:\n  globl: []\n", 2, 3, "unknown key 'globl' (did you mean 'global'?)"),
    ("escalationRule: {}\n", 1, 1, "unknown key 'escalationRule'"),
    ("- a\n- b\n", 1, 1, "the rules file must be a mapping, not a list"),
    ("escalationRules:\n  global:\n    pattern: x\n", 3, 5, "global must be a list, not a mapping"),
    ("escalationRules:\n  global:\n    - pattern: x\n", 3, 7, "missing required key 'action'"),
    ("escalationRules:\n  global:\n    - action: allow\n", 3, 7, "missing required key 'pattern'"),
    ("escalationRules:\n  global:\n    - pattern: x\n      action: alow\n", 4, 15, "unknown action 'alow' (did you mean 'allow'?)"),
    ("escalationRules:\n  global:\n    - pattern: 42\n      action: allow\n", 3, 16, "pattern must be a string, not the number 42"),
    ("escalationRules:\n  global:\n    - pattern: ''\n      action: allow\n", 3, 16, "pattern must not be empty"),
    ("escalationRules:\n  global:\n    - pattern: 're:'\n      action: allow\n", 3, 16, "empty regular expression"),
    ("escalationRules:\n  global:\n    - pattern: re:a(b\n      action: allow\n", 3, 19, "bad regular expression: missing )"),
    ("escalationRules:\n  global:\n    - {pattern: x, action: allow, patern: y}\n", 3, 35, "unknown key 'patern'"),
    ("escalationRules:\n  global:\n    - {pattern: x, action: allow, timeout: -1}\n", 3, 44, "timeout must be at least 0, not -1"),
    ("escalationRules:\n  global:\n    - {pattern: x, action: allow}\n    - {pattern: x, pattern: y, action: allow}\n", 4, 20, "duplicate key 'pattern'"),
    ("escalationRules:\n  taskOverrides:\n    deploy:\n      alwaysAsk: yes please\n", 4, 18, "alwaysAsk must be true or false"),
    ("escalationRules:\n  taskOverrides:\n    deploy:\n      requireConfirm: true\n", 4, 7, "did you mean 'requireConfirmation'"),
    ("escalationRules:\n  taskOverrides:\n    deploy:\n      rules:\n        - {pattern: x, action: nuke}\n", 5, 32, "unknown action 'nuke'"),
    ("escalationRules:\n  defaults:\n    cost_warnin: {onTimeout: stop}\n", 3, 5, "unknown reason 'cost_warnin' (did you mean 'cost_warning'?)"),
    ("escalationRules:\n  defaults:\n    test_failure: {timeout: -5, onTimeout: stop}\n", 3, 29, "timeout must be at least 0, not -5"),
    ("escalationRules:\n  defaults:\n    test_failure: {timeout: ten, onTimeout: stop}\n", 3, 29, "must be a number, not the string 'ten'"),
    ("escalationRules:\n  defaults:\n    test_failure: {timeout: .inf, onTimeout: stop}\n", 3, 29, "finite"),
    ("escalationRules:\n  defaults:\n    test_failure: {timeout: 5}\n", 3, 19, "missing required key 'onTimeout'"),
    ("escalationRules:\n  defaults:\n    test_failure: {onTimeout: explode}\n", 3, 31, "unknown onTimeout 'explode'"),
    ("escalationRules:\n  defaults:\n    test_failure: {onTimeout: agent-decide}\n", 3, 31, "did you mean 'agent_decide'"),
    ("escalationRules:\n  defaults:\n    test_failure: {onTimeout: 'option:'}\n", 3, 31, "needs an option id"),
    ("escalationRules:\n  defaults:\n    test_failure: {onTimeout: option}\n", 3, 31, "unknown onTimeout 'option'"),
    ("escalationRules:\n  defaults:\n    test_failure: stop\n", 3, 19, "must be a mapping, not the string 'stop'"),
    ("policy:\n  maxDepth: 0\n", 2, 13, "maxDepth must be at least 1"),
    ("policy:\n  maxDepth: 2.5\n", 2, 13, "maxDepth must be a whole number"),
    ("policy:\n  loopWindow: -1\n", 2, 15, "loopWindow must be at least 0"),
    ("policy:\n  paths: {a: b}\n", 2, 14, "policy.paths.a must be a list"),
    ("policy:\n  paths: {a: [b, 3]}\n", 2, 18, "policy.paths.a entry must be a string"),
    ("policy:\n  targetHints: {find: [a]}\n", 2, 23, "must be a string, not a list"),
    ("policy:\n  fallback: {}\n", 2, 3, "did you mean 'fallbacks'"),
    ("escalationRules:\n  global: [\n", 3, 1, "invalid YAML"),
    ("escalationRules:\n\tglobal: []\n", 2, 1, "invalid YAML"),
    ("a: b\n  c: d\n", 2, 4, "invalid YAML"),
]


@pytest.mark.parametrize(("text", "line", "column", "fragment"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_malformed_files_are_rejected_with_exact_positions(text: str, line: int, column: int, fragment: str) -> None:
    with pytest.raises(RulesError) as info:
        parse_rules(text, "R.yaml")
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert fragment in err.message
    assert str(err).startswith(f"R.yaml:{line}:{column}: ")
    assert "\n" not in str(err)


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(RulesUnreadable, match="no such file"):
        load_rules(tmp_path / "missing.yaml")
    with pytest.raises(RulesUnreadable, match="directory"):
        load_rules(tmp_path)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(RulesUnreadable, match="UTF-8"):
        load_rules(binary)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b'escalationRules:\n  global:\n    - pattern: "caf\xe9"\n')
    with pytest.raises(RulesUnreadable, match=rf"^{latin}:3:20: cannot read file: not UTF-8 text"):
        load_rules(latin)


def test_a_malformed_file_applies_nothing(tmp_path: Path) -> None:
    # the first rule is fine, the second is not: no Rules object at all comes back
    path = tmp_path / "r.yaml"
    path.write_text(textwrap.dedent("""\
        escalationRules:
          global:
            - {pattern: fine, action: allow}
            - {pattern: fine, action: maybe}
        """))
    with pytest.raises(RulesError):
        load_rules(path)


def test_absurd_nesting_is_an_error_not_a_crash() -> None:
    with pytest.raises(RulesError, match="nested too deeply") as info:
        parse_rules("[" * 5000 + "]" * 5000, "R.yaml")
    assert info.value.line == 1 and info.value.column > 1
