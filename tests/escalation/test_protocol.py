import json

import pytest
from hypothesis import given, settings, strategies as st

from engine.kernel.model import Decision, Origin, Reason, ResolvedBy, Response, ResponseType
from engine.escalation.protocol import (
    ASK_TOOL_NAME,
    PROTOCOL_NOTE,
    decision_message,
    decision_value,
    find_escalation,
    to_escalation,
)
from esc_helpers import make_escalation

OBJ = {
    "escalation": True,
    "reason": "architecture_decision",
    "question": "Use JWT?",
    "context": "auth.ts",
    "options": [{"id": "opt1", "label": "Yes", "recommended": True}, {"id": "opt2", "label": "No"}],
}
RAW = json.dumps(OBJ)


@pytest.mark.parametrize(
    "text",
    [
        RAW,
        f"```json\n{json.dumps(OBJ, indent=2)}\n```",
        f"I need a decision here. {{not json}} Here it is:\n{RAW}\nThanks! }} {{",
        f"Set {{a}} then ```\n{RAW}\n``` and more {{\"x\": 1}}",
        json.dumps({"wrapper": OBJ}),
    ],
    ids=["bare", "fenced", "prose", "fenced-in-prose", "nested"],
)
def test_found_bare_fenced_amid_prose_nested(text: str) -> None:
    assert find_escalation(text) == OBJ


@pytest.mark.parametrize(
    "text",
    [
        "",
        "plain answer",
        '{"escalation": false, "question": "q"}',
        '{"escalation": true, "question": "unterminated',
        '{"escalation": true, "question": "x",}',  # trailing comma: not JSON
        "the escalation JSON would go here {",
        '{"escalation": true' + "[" * 5000,
        "{" * 20000 + "escalation",
    ],
    ids=range(8),
)
def test_malformed_or_absent_is_plain_output(text: str) -> None:
    assert find_escalation(text) is None


def test_non_text_input_is_plain_output() -> None:
    assert find_escalation(None) is None
    assert find_escalation(42) is None


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_never_raises_on_noise(text: str) -> None:
    result = find_escalation(text + '"escalation"' + text)
    assert result is None or result.get("escalation")


def test_to_escalation_normalizes_tolerantly() -> None:
    obj = {
        "escalation": "true",
        "reason": "Quantum_Leap",
        "question": ["line 1", "line 2"],
        "context": {"files": 5},
        "options": ["Yes", {"label": "No", "recommended": "yes"}, {"id": "opt1"}, None, {"id": 3, "recommended": True}],
        "allowAgentDecision": "yes",
        "timeout": "120",
    }
    esc = to_escalation(obj, id="e1", task_id="t", run_id="r", agent="peer1", origin=Origin.AGENT_TOOL, created_at=7)
    assert esc.reason is Reason.OTHER
    assert esc.question == "line 1\nline 2"
    assert esc.context == '{"files": 5}'
    assert [(o.id, o.label, o.recommended) for o in esc.options] == [
        ("opt1", "Yes", False),
        ("opt2", "No", True),
        ("opt1_2", "opt1", False),
        ("3", "3", False),  # only the first recommended counts
    ]
    assert esc.allow_agent_decision is True
    assert esc.timeout == 120.0
    assert esc.origin is Origin.AGENT_TOOL and esc.created_at == 7


@pytest.mark.parametrize("timeout", [-5, "soon", True, float("nan"), float("inf"), [1]])
def test_bad_timeouts_are_ignored(timeout: object) -> None:
    assert to_escalation({"timeout": timeout, "question": "q"}, id="e", task_id="t", run_id="r", agent="a").timeout is None


def test_missing_question_falls_back_to_context() -> None:
    esc = to_escalation({"context": "only context", "options": "nonsense"}, id="e", task_id="t", run_id="r", agent="a")
    assert esc.question == "only context" and esc.context == "" and esc.options == ()
    assert to_escalation({}, id="e", task_id="t", run_id="r", agent="a").question


def test_protocol_note_names_the_json_and_the_tool() -> None:
    assert '"escalation": true' in PROTOCOL_NOTE
    assert ASK_TOOL_NAME in PROTOCOL_NOTE
    for reason in Reason:
        assert reason.value in PROTOCOL_NOTE


def _decision(response: Response, by: ResolvedBy = ResolvedBy.HUMAN, note: str = "", stops: bool = False) -> Decision:
    return Decision("e1", response, by, 0.0, note, stops)


def test_decision_message_for_each_response_type() -> None:
    esc = make_escalation(id="e1")
    opt = decision_message(esc, _decision(Response(ResponseType.OPTION, "opt2", None, "Keep cookies")))
    assert "opt2" in opt and "No, keep sessions" in opt
    assert "Additional instructions: Keep cookies" in opt and "a human" in opt
    text = decision_message(esc, _decision(Response(ResponseType.TEXT, text_response="Ship it"), ResolvedBy.ANSWERS_FILE))
    assert "Ship it" in text and "answers file" in text
    skip = decision_message(esc, _decision(Response(ResponseType.SKIP), ResolvedBy.RULE))
    assert "Skip" in skip and "rule" in skip
    mine = decision_message(
        esc, _decision(Response(ResponseType.AGENT_DECIDE), ResolvedBy.TIMEOUT_DEFAULT, "nobody answered within 300 s")
    )
    assert "Decide yourself" in mine and "Nobody answered" in mine and "timeout default" in mine
    stopped = decision_message(esc, _decision(Response(ResponseType.SKIP), stops=True))
    assert "stopped" in stopped


def test_decision_value() -> None:
    esc = make_escalation(id="e1")
    assert decision_value(esc, _decision(Response(ResponseType.OPTION, "opt1"))) == "Yes, use JWT"
    assert decision_value(esc, _decision(Response(ResponseType.TEXT, text_response="hi"))) == "hi"
    assert decision_value(esc, _decision(Response(ResponseType.SKIP))) == "skip"


# Hostile replies: finding the object is linear in the reply and bounded (json_scan). Each of
# these took minutes with a decode tried at every `{`; the time limit only catches such a hang.
HOSTILE = {
    "open-braces": "escalation " + "{" * 1_000_000,
    "quoted-key-then-open-braces": '"escalation" ' + "{" * 1_000_000,
    "deep-nesting": '{"escalation":' * 70_000,
    "many-bad-objects": '{"escalation": tru} ' * 50_000,
    "many-keys-in-one-string": '{"a": "' + '\\"escalation\\" {' * 60_000 + '"}',
    "nested-failing": '{"escalation": 1, "a": ' * 40_000 + "x",
}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_replies_are_plain_output_quickly(text: str) -> None:
    assert find_escalation(text) is None


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000 + RAW,
        '{"escalation": false} ' * 5_000 + RAW,
        '{"a": "unterminated\n' + RAW,
        '{"a": {"escalation": true, "question": "Use JWT?"}, "b": tru}',
        "[" * 100 + RAW,
    ],
    ids=["after-open-braces", "after-many-objects", "after-a-stray-quote", "inside-a-broken-object", "inside-brackets"],
)
def test_found_after_hostile_noise(text: str) -> None:
    found = find_escalation(text)
    assert found is not None and found["question"] == "Use JWT?"


def test_only_the_first_part_of_a_huge_reply_is_looked_at() -> None:
    from engine.escalation.json_scan import MAX_SCAN_CHARS

    assert find_escalation("x" * (MAX_SCAN_CHARS - len(RAW)) + RAW) == OBJ
    assert find_escalation("x" * MAX_SCAN_CHARS + RAW) is None
