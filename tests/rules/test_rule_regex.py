"""Rule regexes are RE2's: linear-time matching, and what RE2 cannot do is refused at load."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from rules import RulesError, parse_rules
from rules.matcher import Activity, Pattern


def rule_file(pattern: str) -> str:
    return f"escalationRules:\n  global:\n    - pattern: {pattern}\n      action: deny\n"


@pytest.mark.timeout(60)
def test_a_catastrophic_pattern_matches_a_long_argument_in_linear_time() -> None:
    # In a child process: a backtracking regex holds the interpreter, so nothing in this
    # process (not even pytest's timeout) could stop it; the child is simply killed.
    code = textwrap.dedent("""
        from rules import parse_rules
        rules = parse_rules(open(0).read(), "R.yaml")
        for n in (30, 1000, 1_000_000):
            assert rules.match_tool("t", "write_file", {"content": "a" * n + "!"}) is None
            assert rules.match_tool("t", "write_file", {"content": "a" * n}) is not None
        print("done")
    """)
    proc = subprocess.run([sys.executable, "-c", code], input=rule_file("re:(a+)+$"), capture_output=True,
                          text=True, timeout=30)
    assert (proc.returncode, proc.stdout) == (0, "done\n"), proc.stderr


@pytest.mark.parametrize(
    ("pattern", "column", "why"),
    [
        (r"'re:(a)\1'", 23, r"invalid escape sequence: \1"),  # backreference
        ("'re:foo(?=bar)'", 23, "invalid perl operator: (?="),  # lookahead
        ("'re:x(?<!y)z'", 21, "invalid perl operator: (?<!"),  # lookbehind
        ("'re:(?P<n>a)(?P=n)'", 20, "invalid perl operator: (?P"),  # named backreference
        ("'re:a{1001}'", 21, "invalid repetition size: {1001}"),
        ("'re:a(b'", 20, "missing ): a(b"),
        (r"re:end\Z", 22, r"invalid escape sequence: \Z"),
        (r'"re:a\x28b"', 16, "missing ): a(b"),  # an escape in the file: no column inside the pattern
    ],
)
def test_what_re2_cannot_do_is_refused_at_the_pattern(pattern: str, column: int, why: str) -> None:
    with pytest.raises(RulesError) as info:
        parse_rules(rule_file(pattern), "R.yaml")
    err = info.value
    assert (err.line, err.column) == (3, column), str(err)
    assert f"global rule 1: bad regular expression: {why}" in err.message
    assert "RE2 syntax: no backreferences or lookaround" in err.message


def test_rule_regexes_keep_their_meaning() -> None:
    assert Pattern("re:npm\\s+publish").matches(Activity("NPM   publish --tag next"))
    assert Pattern("re:ÉCOLE").matches(Activity("l'école"))  # case-insensitive beyond ASCII
    assert Pattern(r"re:^run_command command: git push\b").matches(Activity("run_command command: git push origin"))
    assert not Pattern("re:^rm ").matches(Activity("please rm -rf"))


def test_agent_text_with_lone_surrogates_is_matched_not_crashed_on() -> None:
    activity = Activity.of_tool("write_file", {"content": "x\ud800y rm -rf"})  # what json.loads gives for "\ud800"
    assert Pattern("re:rm\\s+-rf").matches(activity)
    assert Pattern("rm -rf").matches(activity)
