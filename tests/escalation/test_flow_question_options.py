"""A flow's own question: `escalate to human e with options [...]`, and a map that says its
reason, context and agent (docs/language.md, "escalate to human")."""

from __future__ import annotations

import pytest

from engine.kernel.model import Reason, Response, ResponseType
from engine.runtime.engine import RunStatus
from tests.escalation.e2e_support import Harness
from tests.lang.helpers import codes, compile_text

OPTIONS = """\
streetrace v1

flow main:
    $where = escalate to human "Deploy where?" with options ["staging", {id: "prod", label: "Production", recommended: true}]
    return $where
"""

SAYS_WHY = """\
streetrace v1

flow main:
    $ok = escalate to human { question: "Ship on a Friday?", reason: "breaking_change", agent: "release", context: "v1.4.2" }
    return $ok
"""


@pytest.mark.parametrize(("option", "value"), [("staging", "staging"), ("prod", "Production")])
async def test_options_are_offered_and_the_label_is_the_value(tmp_path, option: str, value: str) -> None:
    h = Harness(tmp_path, OPTIONS, "agents: {}\n")
    handle = h.start()
    pending = await h.pending()
    esc = pending.escalation
    assert [(o.id, o.label, o.recommended) for o in esc.options] == [("staging", "staging", False), ("prod", "Production", True)]
    assert (esc.reason, esc.agent, esc.origin.value) == (Reason.OTHER, "flow", "flow")
    h.broker.answer(esc.id, Response(ResponseType.OPTION, option))
    assert await h.finish(handle) is RunStatus.DONE, handle.error
    assert handle.result == value


async def test_a_map_says_reason_agent_and_context(tmp_path) -> None:
    h = Harness(tmp_path, SAYS_WHY, "agents: {}\n")
    handle = h.start()
    esc = (await h.pending()).escalation
    assert (esc.reason, esc.agent, esc.question, esc.context) == (Reason.BREAKING_CHANGE, "release", "Ship on a Friday?", "v1.4.2")
    h.broker.answer(esc.id, Response(ResponseType.TEXT, text_response="after the weekend"))
    await h.finish(handle)
    assert handle.result == "after the weekend"


def test_the_options_are_checked_and_generated_as_an_expression() -> None:
    # The options are analyzed as the question is: the same diagnostic for the same mistake.
    assert codes('flow main:\n    $x = escalate to human "q?" with options $missing\n    return $x\n') == \
        codes('flow main:\n    $x = escalate to human $missing\n    return $x\n') != []
    result = compile_text('flow main:\n    escalate to human "q?" with options ["a", "b"]\n')
    assert result.ok, result.diagnostics
    assert "options=['a', 'b']" in result.python
    plain = compile_text('flow main:\n    escalate to human "q?"\n')
    assert "options=" not in plain.python  # the generated code of a question without options is as before
    assert codes('flow main:\n    escalate to human "q?" with option ["a"]\n') == ["E0007"]


def test_options_stays_a_name_elsewhere() -> None:
    result = compile_text('flow main:\n    $options = ["a"]\n    $x = escalate to human "q?" with options $options\n    return $options\n')
    assert result.ok, result.diagnostics
