import asyncio
from typing import Any

import pytest

from engine.escalation.broker import RAISED, EscalationBroker
from engine.kernel.clock import FakeClock
from engine.escalation.desk import EscalationDesk, ToolCallOutcome
from engine.kernel.model import Origin, Reason, ResolvedBy, Response, ResponseType
from rules import parse_rules
from esc_helpers import make_escalation

RULES = parse_rules(
    """\
escalationRules:
  global:
    - {pattern: "auto format", action: allow}
    - {pattern: "legacy api", action: deny}
    - {pattern: "drop database", action: stop}
    - {pattern: "delete file", action: ask_user, timeout: 30}
    - {pattern: "re:^run_command command: git push", action: deny}
    - {pattern: "rm -rf", action: stop}
  taskOverrides:
    deploy-production:
      alwaysAsk: true
      requireConfirmation: true
  defaults:
    test_failure: {timeout: 60, onTimeout: stop}
    architecture_decision: {onTimeout: wait}
""",
    "r.yaml",
)


class Harness:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.broker = EscalationBroker(self.clock)
        self.events: list[tuple[str, str, dict[str, Any]]] = []
        self.desk = EscalationDesk(self.broker, RULES, self.clock, lambda run, t, f: self.events.append((run, t, f)))

    def types(self) -> list[str]:
        return [t for _, t, _ in self.events]


async def test_unmatched_escalation_asks_a_human_and_emits_events() -> None:
    h = Harness()
    esc = make_escalation(id="e1", reason=Reason.TEST_FAILURE, question="tests fail", context="3 of 40")
    task = asyncio.create_task(h.desk.decide(esc))
    await asyncio.sleep(0)
    [pending] = h.broker.pending()
    assert pending.policy.deadline == 60 and pending.escalation.created_at == 0
    run, kind, fields = h.events[0]
    assert (run, kind) == ("run1", "human_escalation")
    assert fields == {
        "id": "e1",
        "taskId": "task",
        "agent": "peer1",
        "reason": "test_failure",
        "question": "tests fail",
        "context": "3 of 40",
        "options": [
            {"id": "opt1", "label": "Yes, use JWT", "description": "", "recommended": True},
            {"id": "opt2", "label": "No, keep sessions", "description": "", "recommended": False},
        ],
        "allowAgentDecision": False,
        "timeout": 60,
        "onTimeout": "stop",
        "origin": "agent_text",
    }
    h.broker.answer("e1", Response(ResponseType.TEXT, text_response="fix them"))
    decision = await task
    assert decision.response.text_response == "fix them"
    assert h.events[-1] == ("run1", "decision", decision.to_event_fields(esc))
    assert h.events[-1][2]["resolvedBy"] == "human"


async def test_timeout_default_through_the_desk() -> None:
    h = Harness()
    task = asyncio.create_task(h.desk.decide(make_escalation(reason=Reason.TEST_FAILURE, question="q")))
    await asyncio.sleep(0)
    h.clock.advance(60)
    decision = await task
    assert decision.stops_task and decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT
    assert h.events[-1][2]["resolvedBy"] == "timeout_default"


@pytest.mark.parametrize(
    ("question", "response_type", "stops"),
    [
        ("please auto-format the code", ResponseType.AGENT_DECIDE, False),
        ("keep the legacy API?", ResponseType.SKIP, False),
        ("drop database now?", ResponseType.SKIP, True),
    ],
)
async def test_rule_actions_resolve_at_once(question: str, response_type: ResponseType, stops: bool) -> None:
    h = Harness()
    decision = await h.desk.decide(make_escalation(question=question))
    assert decision.response.response_type is response_type
    assert decision.stops_task is stops
    assert decision.resolved_by is ResolvedBy.RULE and "rule" in decision.note
    assert h.types() == ["human_escalation", "decision"]
    assert h.events[1][2]["resolvedBy"] == "rule"
    assert h.broker.pending() == []


async def test_always_ask_turns_allow_into_a_human_wait_without_deadline() -> None:
    h = Harness()
    task = asyncio.create_task(h.desk.decide(make_escalation(question="auto format", task="deploy-production")))
    await asyncio.sleep(0)
    [pending] = h.broker.pending()
    assert pending.policy.deadline is None
    assert h.events[0][2]["timeout"] is None and h.events[0][2]["onTimeout"] == "wait"
    h.broker.answer(pending.escalation.id, Response(ResponseType.SKIP))
    assert (await task).resolved_by is ResolvedBy.HUMAN


def test_tool_verdicts() -> None:
    desk = Harness().desk
    assert desk.tool_verdict("t", "read_file", {"path": "a"}).gate == "allow"
    assert desk.tool_verdict("t", "delete_file", {"path": "a"}).gate == "ask"
    assert desk.tool_verdict("t", "run_command", {"command": "git push -f"}).gate == "deny"
    assert desk.tool_verdict("t", "run_command", {"command": "rm -rf /"}).gate == "stop"
    assert desk.tool_verdict("deploy-production", "read_file", {"path": "a"}).gate == "ask"
    assert desk.tool_verdict("deploy-production", "run_command", {"command": "git push"}).gate == "deny"


def _settle(desk: EscalationDesk, tool: str, args: dict) -> "asyncio.Future[ToolCallOutcome]":
    """A tool call as a run makes it: its one verdict, then what that verdict makes of it."""
    return asyncio.ensure_future(desk.settle_tool("r", "t", "peer1", tool, args, desk.tool_verdict("t", tool, args)))


async def test_approve_tool_allowed_denied_stop() -> None:
    h = Harness()
    allowed = await _settle(h.desk, "read_file", {"path": "a"})
    assert allowed.verdict == "allowed" and allowed.runs
    denied = await _settle(h.desk, "run_command", {"command": "git push"})
    assert denied.verdict == "denied" and not denied.runs and "denied by rule" in denied.message
    stop = await _settle(h.desk, "run_command", {"command": "rm -rf x"})
    assert stop.stops and not stop.runs
    assert [(t, f["verdict"]) for _, t, f in h.events] == [
        ("tool_call", "allowed"),
        ("tool_call", "denied"),
        ("tool_call", "denied"),
    ]
    assert h.events[2][2]["stopped"] is True
    assert h.events[0][2] == {"agent": "peer1", "tool": "read_file", "args": {"path": "a"}, "verdict": "allowed"}


async def _approval(h: Harness, response: Response | None, advance: float = 0) -> ToolCallOutcome:
    task = _settle(h.desk, "delete_file", {"path": "old.txt"})
    await asyncio.sleep(0)
    [pending] = h.broker.pending()
    esc = pending.escalation
    assert esc.origin is Origin.TOOL_APPROVAL
    assert [o.id for o in esc.options] == ["approve", "deny"]
    assert "delete_file" in esc.question and "old.txt" in esc.context
    if response is not None:
        h.broker.answer(esc.id, response)
    else:
        h.clock.advance(advance)
    return await task


async def test_tool_approval_confirmed_by_a_human() -> None:
    h = Harness()
    verdict = await _approval(h, Response(ResponseType.OPTION, "approve", None, "only this once"))
    assert verdict.verdict == "confirmed" and "only this once" in verdict.message
    assert h.types() == ["human_escalation", "decision", "tool_call"]
    assert h.events[-1][2]["verdict"] == "confirmed"


@pytest.mark.parametrize(
    "response",
    [
        Response(ResponseType.OPTION, "deny"),
        Response(ResponseType.SKIP),
        Response(ResponseType.TEXT, text_response="use trash instead"),
        Response(ResponseType.AGENT_DECIDE),
    ],
)
async def test_anything_but_approve_denies_the_tool(response: Response) -> None:
    h = Harness()
    verdict = await _approval(h, response)
    assert verdict.verdict == "denied" and verdict.decision is not None
    if response.text_response:
        assert "use trash instead" in verdict.message


async def test_unanswered_tool_approval_fails_closed_at_the_rules_timeout() -> None:
    h = Harness()
    assert h.events == []
    verdict = await _approval(h, None, advance=30)
    assert verdict.verdict == "denied" and verdict.decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT
    assert h.events[0][2]["onTimeout"] == "option:deny" and h.events[0][2]["timeout"] == 30


async def test_raised_is_visible_to_subscribers_before_decide_returns() -> None:
    h = Harness()
    seen = []
    h.broker.subscribe(lambda e: seen.append(e.kind))
    task = asyncio.create_task(h.desk.decide(make_escalation(reason=Reason.ARCHITECTURE_DECISION)))
    await asyncio.sleep(0)
    assert seen == [RAISED]
    task.cancel()


def test_decision_event_names_the_chosen_option_and_a_stop() -> None:
    from engine.kernel.model import Decision, ResolvedBy, Response, ResponseType

    esc = make_escalation(id="e1")
    chosen = Decision("e1", Response(ResponseType.OPTION, selected_option="opt2"), ResolvedBy.HUMAN)
    assert chosen.to_event_fields(esc)["selectedLabel"] == "No, keep sessions"
    stop = Decision("e1", Response(ResponseType.SKIP), ResolvedBy.TIMEOUT_DEFAULT, stops_task=True)
    assert stop.to_event_fields(esc)["stopsTask"] is True and "selectedLabel" not in stop.to_event_fields(esc)
