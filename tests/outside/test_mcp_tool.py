"""The check of `escalate_to_human`'s arguments (engine/outside/mcp_tool.py), in process: any
JSON value a client sends is either a checked escalation or BadArguments with one line, and the
published schema agrees with the check."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.kernel.model import Origin, Reason
from engine.outside.mcp_tool import INPUT_SCHEMA, BadArguments, parse
from tests.outside.mcp_harness import question

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                    max_leaves=20)
KEYS = st.sampled_from(sorted(INPUT_SCHEMA["properties"]) + ["taskId", "escalation"])


def test_seed_004s_example_is_asked_as_written() -> None:
    ask = parse(question(requestId="r-1", timeout=120))
    esc = ask.escalation
    assert (esc.reason, esc.question, esc.context, esc.timeout, esc.origin) == (
        Reason.ARCHITECTURE_DECISION, "Use JWT instead of sessions?", "Touches src/api/auth.ts and 5 tests", 120.0,
        Origin.AGENT_TOOL)
    assert [(o.id, o.label, o.description, o.recommended) for o in esc.options] == [
        ("opt1", "Yes, use JWT", "", True), ("opt2", "No, keep sessions", "less churn", False)]
    assert ask.request_id == "r-1" and not esc.allow_agent_decision


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, JSON, max_size=8) | JSON)
def test_any_json_is_checked_or_refused_in_one_line(arguments) -> None:
    try:
        ask = parse(arguments)
    except BadArguments as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    jsonschema.validate(arguments, INPUT_SCHEMA)  # what passes the check, the schema allows too
    assert ask.escalation.question.strip()


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, JSON, max_size=8))
def test_what_the_schema_refuses_the_check_refuses(arguments) -> None:
    try:
        jsonschema.validate(arguments, INPUT_SCHEMA)
    except jsonschema.ValidationError:
        with pytest.raises(BadArguments):
            parse(arguments)
