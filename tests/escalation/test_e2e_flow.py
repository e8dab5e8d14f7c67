"""`$x = escalate to human e` in a flow: a real pause whose answer's text is the value."""

import pytest

from engine.kernel.model import Response, ResponseType
from engine.runtime.engine import RunStatus
from e2e_support import Harness

SOURCE = """\
streetrace v1

flow main:
    $answer = escalate to human "Deploy to production now?"
    return $answer
"""


@pytest.mark.parametrize(
    ("response", "value"),
    [(Response(ResponseType.TEXT, text_response="yes, after 6pm"), "yes, after 6pm"), (Response(ResponseType.SKIP), "skip")],
    ids=["text", "skip"],
)
async def test_flow_escalation_value(tmp_path, response, value) -> None:
    h = Harness(tmp_path, SOURCE, "agents: {}\n")
    handle = h.start()
    pending = await h.pending()
    assert pending.escalation.origin.value == "flow" and "Deploy to production now?" in pending.escalation.question
    h.broker.answer(pending.escalation.id, response)
    assert await h.finish(handle) is RunStatus.DONE, handle.error
    assert handle.result == value
