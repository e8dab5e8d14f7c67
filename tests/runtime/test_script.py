"""The --script file: formats accepted, and every mistake reported as FILE:LINE:COL."""

from __future__ import annotations

import pytest

from engine.runtime.script import ScriptError, load_script, parse_script
from engine.runtime.scripted_model import ScriptCursor, ScriptExhausted


def test_all_reply_forms() -> None:
    script = parse_script(
        """
agents:
  peer1:
    - "plain"
    - text: "only for JWT"
      when: "JWT"
    - tool: delete_file
      args: {path: old.txt}
    - escalate:
        reason: architecture_decision
        question: "Use JWT?"
        options: [{id: opt1, label: "Yes", recommended: true}]
"""
    )
    kinds = [r.kind for r in script.agents["peer1"]]
    assert kinds == ["text", "text", "tool", "escalate"]
    assert script.agents["peer1"][1].when == "JWT"
    assert script.agents["peer1"][2].args == {"path": "old.txt"}
    assert script.agents["peer1"][3].escalation["question"] == "Use JWT?"


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        ("agents:\n  a:\n    - text: [unclosed\n", 4, 1, "invalid YAML"),
        ("agnts: {}\n", 1, 1, "unknown key 'agnts' (did you mean 'agents'?)"),
        ("agents:\n  a: hello\n", 2, 6, "must be a list"),
        ("agents:\n  a:\n    - {text: x, tool: y}\n", 3, 7, "exactly one of"),
        ("agents:\n  a:\n    - {txt: x}\n", 3, 8, "unknown key 'txt' (did you mean 'text'?)"),
        ("agents:\n  a:\n    - {tool: t, args: [1]}\n", 3, 23, "args must be a mapping"),
        ("agents:\n  a:\n    - escalate: {reason: other}\n", 3, 17, "missing required key 'question'"),
        ("agents:\n  a:\n    - escalate: {question: q, timeout: soon}\n", 3, 40, "timeout must be a number"),
        ("agents:\n  a:\n    - escalate: {question: q, timeout: -5}\n", 3, 40, "at least 0"),
        ("agents:\n  a:\n    - escalate: {question: q, allowAgentDecision: 'no'}\n", 3, 51, "true or false"),
        ("agents:\n  a:\n    - escalate: {question: [1, 2]}\n", 3, 28, "question must be a string"),
        ("agents:\n  a:\n    - escalate: {question: q, options: [{label: x}]}\n", 3, 41, "missing required key 'id'"),
        ("", 1, 1, "empty script"),
    ],
)
def test_errors_have_positions(text: str, line: int, col: int, fragment: str) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(text, "s.yaml")
    assert (info.value.line, info.value.column) == (line, col), str(info.value)
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"s.yaml:{line}:{col}: ")


def test_missing_file_is_a_script_error(tmp_path) -> None:
    with pytest.raises(ScriptError) as info:
        load_script(tmp_path / "nope.yaml")
    assert str(info.value) == f"{tmp_path / 'nope.yaml'}: cannot read file: no such file"


def test_cursor_first_unused_matching_reply() -> None:
    script = parse_script(
        """
agents:
  a:
    - text: "jwt answer"
      when: "jwt"
    - "first plain"
    - "second plain"
"""
    )
    cursor = ScriptCursor(script)
    assert cursor.next_reply("a", "nothing")[1].text == "first plain"
    assert cursor.next_reply("a", "Use JWT please")[1].text == "jwt answer"
    assert cursor.next_reply("a", "Use JWT please")[1].text == "second plain"
    with pytest.raises(ScriptExhausted, match="'a'"):
        cursor.next_reply("a", "")
    # A second run keeps its own cursor.
    assert ScriptCursor(script).next_reply("a", "x")[1].text == "first plain"


def test_the_unnamed_agent_is_scripted_under_default() -> None:
    cursor = ScriptCursor(parse_script('agents:\n  default: ["unnamed"]\n  "": []\n'))
    assert cursor.next_reply("", "x")[1].text == "unnamed"
    assert ScriptCursor(parse_script('agents:\n  "": ["empty key"]\n')).next_reply("", "x")[1].text == "empty key"
