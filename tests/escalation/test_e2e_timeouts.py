"""Issue 4 end to end: every onTimeout kind on a fake clock, through real runs."""

import asyncio

import pytest

from engine.kernel.model import ResolvedBy, Response, ResponseType
from engine.runtime.engine import RunStatus
from e2e_support import ONE_AGENT, Harness

RULES = """\
escalationRules:
  defaults:
    cost_warning:        {timeout: 60, onTimeout: continue}
    test_failure:        {timeout: 60, onTimeout: stop}
    file_conflict:       {timeout: 60, onTimeout: agent_decide}
    dependency_issue:    {timeout: 60, onTimeout: recommended}
    security_concern:    {timeout: 60, onTimeout: "option:b"}
    architecture_decision: {onTimeout: wait}
  taskOverrides:
    careful:
      alwaysAsk: true
"""


def script(reason: str, allow: bool = False) -> str:
    return f"""\
agents:
  helper:
    - escalate:
        reason: {reason}
        question: "What now?"
        options:
          - {{id: a, label: "Option A", recommended: true}}
          - {{id: b, label: "Option B"}}
        allowAgentDecision: {str(allow).lower()}
    - text: "chose A"
      when: "Chosen option: a"
    - text: "chose B"
      when: "Chosen option: b"
    - text: "continuing on my own after silence"
      when: "Nobody answered in time"
    - text: "deciding"
      when: "Decide yourself"
    - "no match"
"""


@pytest.mark.parametrize(
    ("reason", "allow", "expected_status", "expected_result", "response_type"),
    [
        ("cost_warning", False, RunStatus.DONE, "continuing on my own after silence", "agent_decide"),
        ("test_failure", False, RunStatus.STOPPED, None, "skip"),
        ("file_conflict", False, RunStatus.DONE, "continuing on my own after silence", "agent_decide"),
        ("dependency_issue", False, RunStatus.DONE, "chose A", "option"),
        ("security_concern", False, RunStatus.DONE, "chose B", "option"),
        ("test_failure", True, RunStatus.DONE, "continuing on my own after silence", "agent_decide"),
    ],
    ids=["continue", "stop", "agent_decide", "recommended", "option:ID", "allowAgentDecision"],
)
async def test_on_timeout_kinds(tmp_path, reason, allow, expected_status, expected_result, response_type) -> None:
    h = Harness(tmp_path, ONE_AGENT, script(reason, allow), RULES)
    handle = h.start()
    pending = await h.pending()
    assert pending.policy.deadline == 60
    h.clock.advance(59)
    await asyncio.sleep(0.05)
    assert h.broker.pending() == [pending]  # not yet
    h.clock.advance(1)
    status = await h.finish(handle)
    assert status is expected_status, handle.error
    if expected_result is not None:
        assert handle.result == expected_result
    [decision] = h.events(handle, "decision")
    assert decision["resolvedBy"] == ResolvedBy.TIMEOUT_DEFAULT.value
    assert decision["responseType"] == response_type
    # the default applied exactly once; a late answer is refused
    with pytest.raises(Exception, match="already resolved"):
        h.broker.answer(pending.escalation.id, Response(ResponseType.SKIP))


@pytest.mark.parametrize(("reason", "task"), [("architecture_decision", "task"), ("cost_warning", "careful")], ids=["wait", "alwaysAsk"])
async def test_wait_and_always_ask_have_no_deadline(tmp_path, reason, task) -> None:
    h = Harness(tmp_path, ONE_AGENT, script(reason), RULES)
    handle = h.start(task=task)
    pending = await h.pending()
    assert pending.policy.deadline is None
    h.clock.advance(10_000)
    await asyncio.sleep(0.05)
    assert h.broker.pending() == [pending] and handle.status is RunStatus.WAITING
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "b"))
    assert await h.finish(handle) is RunStatus.DONE and handle.result == "chose B"
