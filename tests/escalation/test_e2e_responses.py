"""Issue 4 end to end: each response type reaches the asking agent's session, through real ADK
runs with the scripted model."""

import pytest

from engine.escalation.headless import HeadlessResponder
from engine.escalation.answers import parse_answers
from engine.kernel.model import ResolvedBy, Response, ResponseType
from engine.runtime.engine import RunStatus
from e2e_support import ONE_AGENT, Harness

ESCALATE = """\
agents:
  helper:
    - escalate:
        reason: architecture_decision
        question: "Use JWT instead of sessions?"
        context: "Touches src/api/auth.ts and 5 tests"
        options:
          - {id: opt1, label: "Yes, use JWT", recommended: true}
          - {id: opt2, label: "No, keep sessions"}
    - text: "GOT option opt2 with instructions"
      when: "Additional instructions: keep the cookie"
    - text: "GOT option opt2"
      when: "Chosen option: opt2 - No, keep sessions"
    - text: "GOT text"
      when: "Answer: ship it behind a flag"
    - text: "GOT skip"
      when: "Skip:"
    - text: "GOT decide myself"
      when: "Decide yourself"
    - "GOT something unexpected"
"""


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (Response(ResponseType.OPTION, "opt2"), "GOT option opt2"),
        (Response(ResponseType.OPTION, "opt2", None, "keep the cookie"), "GOT option opt2 with instructions"),
        (Response(ResponseType.TEXT, text_response="ship it behind a flag"), "GOT text"),
        (Response(ResponseType.SKIP), "GOT skip"),
        (Response(ResponseType.AGENT_DECIDE), "GOT decide myself"),
    ],
    ids=["option", "option+instructions", "text", "skip", "agent_decide"],
)
async def test_human_answer_reaches_the_same_agent_session(tmp_path, response, expected) -> None:
    h = Harness(tmp_path, ONE_AGENT, ESCALATE)
    handle = h.start()
    pending = await h.pending()
    assert pending.escalation.agent == "helper" and pending.escalation.run_id == handle.id
    assert handle.status is RunStatus.WAITING
    h.broker.answer(pending.escalation.id, response)
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == expected
    [raised] = h.events(handle, "human_escalation")
    assert raised["question"] == "Use JWT instead of sessions?" and raised["onTimeout"] == "wait"
    [decision] = h.events(handle, "decision")
    assert decision["resolvedBy"] == "human" and decision["responseType"] == response.response_type.value


AMID_PROSE = '''\
agents:
  helper:
    - "I found two ways. Before I go on:\\n```json\\n{\\"escalation\\": true, \\"reason\\": \\"unclear_requirement\\", \\"question\\": \\"Which endpoint?\\", \\"options\\": [{\\"id\\": \\"v1\\", \\"label\\": \\"/v1\\"}, {\\"id\\": \\"v2\\", \\"label\\": \\"/v2\\", \\"recommended\\": true}]}\\n```\\nThanks!"
    - text: "using v1"
      when: "Chosen option: v1"
    - "fallback"
'''


async def test_escalation_json_amid_prose_answered_from_the_answers_file(tmp_path) -> None:
    h = Harness(tmp_path, ONE_AGENT, AMID_PROSE)
    HeadlessResponder(h.broker, parse_answers("- {responseType: option, selectedOption: v1}\n", "A.yaml"))
    handle = h.start()
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "using v1"
    [raised] = h.events(handle, "human_escalation")
    assert raised["reason"] == "unclear_requirement" and raised["onTimeout"] == "stop" and raised["timeout"] == 300
    assert h.events(handle, "decision")[0]["resolvedBy"] == ResolvedBy.ANSWERS_FILE.value


ASK_TOOL = """\
agents:
  helper:
    - tool: ask_human
      args:
        reason: dependency_issue
        question: "Upgrade lark to 1.3?"
        options: [{id: up, label: "Upgrade"}, {id: pin, label: "Pin 1.2"}]
    - text: "pinned as told"
      when: "Chosen option: pin"
    - "other"
"""


async def test_ask_tool_pauses_and_resumes_with_the_decision(tmp_path) -> None:
    h = Harness(tmp_path, ONE_AGENT, ASK_TOOL)
    handle = h.start()
    pending = await h.pending()
    esc = pending.escalation
    assert esc.origin.value == "agent_tool" and [o.id for o in esc.options] == ["up", "pin"]
    h.broker.answer(esc.id, Response(ResponseType.OPTION, "pin"))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "pinned as told"


async def test_two_runs_escalating_at_once_get_their_own_answers(tmp_path) -> None:
    h = Harness(tmp_path, ONE_AGENT, ESCALATE)
    first, second = h.start(task="a"), h.start(task="b")
    for _ in range(3000):
        if len(h.broker.pending()) == 2:
            break
        await __import__("asyncio").sleep(0.01)
    by_run = {p.escalation.run_id: p.escalation.id for p in h.broker.pending()}
    assert set(by_run) == {first.id, second.id}
    h.broker.answer(by_run[second.id], Response(ResponseType.SKIP))
    h.broker.answer(by_run[first.id], Response(ResponseType.TEXT, text_response="ship it behind a flag"))
    await h.finish(first)
    await h.finish(second)
    assert (first.result, second.result) == ("GOT text", "GOT skip")
