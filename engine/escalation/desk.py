"""The escalation desk: rules first, then the one place where a run waits for a human.

Every agent escalation (JSON reply, ask tool, flow statement) goes through `decide`; every tool
call goes through `approve_tool`. Both apply the rules and, when a human must answer, go through
`_wait_for_human`, which raises the escalation on the broker and emits the contract's events.
Rule semantics left open by the contract (docs/escalation.md): `allow` resolves at once as
agent_decide, `deny` as skip, `stop` stops the task; `alwaysAsk` turns `allow` into asking.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any, Callable

from engine.escalation.broker import APPROVE, DENY, EscalationBroker
from engine.escalation.clock import Clock
from engine.escalation.model import (
    Decision,
    Escalation,
    OnTimeout,
    Option,
    Origin,
    PendingEscalation,
    Reason,
    ResolvedBy,
    Response,
    ResponseType,
    TimeoutPolicy,
)
from rules.model import Action, Rule, Rules

Emit = Callable[[str, str, dict[str, Any]], None]  # (run_id, event type, fields)

# tool_verdict() results
ALLOW, ASK, STOP = "allow", "ask", "stop"
# approve_tool() results (the contract's tool_call verdicts, plus stop)
ALLOWED, CONFIRMED, DENIED = "allowed", "confirmed", "denied"

TOOL_APPROVAL_REASON = Reason.SECURITY_CONCERN
_ids = itertools.count(1)


def new_escalation_id() -> str:
    """Unique in the process (one broker serves every run of the process); durable runs use
    their recorded step's key instead, unique in the database and the same on replay."""
    return f"esc-{next(_ids)}"


async def minted(escalation: Escalation, clock: Clock) -> Escalation:
    """Give an escalation raised without an id its id and raise time, as a recorded step: after
    a restart the run asks again under the same id, with the same deadline."""
    if escalation.id:
        return escalation if escalation.created_at else replace(escalation, created_at=clock.now())
    from engine.durable.steps import step, step_key

    async def mint() -> list[Any]:
        return [step_key() or new_escalation_id(), clock.now()]

    esc_id, created = await step("escalation", mint)
    return replace(escalation, id=esc_id, created_at=created)


class ToolVerdict(str):
    """approve_tool's verdict (`allowed`, `confirmed`, `denied`, `stop`), comparable as a str,
    carrying what the agent should be told and the human decision, if one was taken."""

    message: str
    decision: Decision | None

    def __new__(cls, verdict: str, message: str = "", decision: Decision | None = None) -> "ToolVerdict":
        obj = super().__new__(cls, verdict)
        obj.message = message
        obj.decision = decision
        return obj


class EscalationDesk:
    def __init__(self, broker: EscalationBroker, rules: Rules, clock: Clock, emit: Emit | None = None) -> None:
        self.broker = broker
        self.rules = rules
        self.clock = clock
        self._emit = emit or (lambda run_id, type_, fields: None)

    # -- agent escalations ----------------------------------------------------------------------

    async def decide(self, escalation: Escalation) -> Decision:
        """Resolve an agent's escalation: by a rule at once, or by a human (or their stand-in:
        answers file, timeout default) through the broker. A stopping decision has
        `stops_task` set; the caller ends the task."""
        escalation = await minted(escalation, self.clock)
        rule = self.rules.match_escalation(escalation)
        action = rule.action if rule else Action.ASK_USER
        override = self.rules.override(escalation.task_id)
        if action is Action.ALLOW and override is not None and override.always_ask:
            action = Action.ASK_USER
        if action is Action.ASK_USER:
            return await self._wait_for_human(escalation, rule)
        assert rule is not None  # only a matched rule can allow, deny or stop
        self._emit_raised(escalation, TimeoutPolicy(None))
        decision = _rule_decision(escalation, rule, self.clock.now())
        self._emit(escalation.run_id, "decision", decision.to_event_fields(escalation))
        return decision

    # -- tool gating ------------------------------------------------------------------------------

    def tool_verdict(self, task: str, tool: str, args: dict[str, Any]) -> str:
        """What the rules say about a tool call: allow, deny, ask (a human) or stop."""
        rule = self.rules.match_tool(task, tool, args)
        if rule is not None and rule.action is Action.DENY:
            return DENY
        if rule is not None and rule.action is Action.STOP:
            return STOP
        override = self.rules.override(task)
        if (rule is not None and rule.action is Action.ASK_USER) or (override and override.require_confirmation):
            return ASK
        return ALLOW

    async def approve_tool(self, run_id: str, task: str, agent: str, tool: str, args: dict[str, Any]) -> ToolVerdict:
        """Gate one tool call; emits `tool_call`. Only `allowed` and `confirmed` may run it."""
        rule = self.rules.match_tool(task, tool, args)
        verdict = self.tool_verdict(task, tool, args)
        if verdict == ALLOW:
            result = ToolVerdict(ALLOWED)
        elif verdict == DENY:
            result = ToolVerdict(DENIED, f"The tool call {tool} was refused by {_rule_name(rule)}. Do not retry it.")
        elif verdict == STOP:
            result = ToolVerdict(STOP, f"The tool call {tool} stopped the task ({_rule_name(rule)}).")
        else:
            escalation = await minted(_tool_escalation(run_id, task, agent, tool, args), self.clock)
            if rule is not None and rule.why:  # a shell command rules cannot check: say why a human is asked
                escalation = replace(escalation, context=f"{escalation.context}\n{rule.why}")
            result = _tool_result(tool, await self._wait_for_human(escalation, rule))
        stopped = result == STOP
        fields: dict[str, Any] = {"agent": agent, "tool": tool, "args": args, "verdict": DENIED if stopped else str(result)}
        if stopped:
            fields["stopped"] = True  # the contract's verdicts have no "stop": denied, and the task ends
        self._emit(run_id, "tool_call", fields)
        return result

    # -- the one human wait -------------------------------------------------------------------------

    async def _wait_for_human(self, escalation: Escalation, rule: Rule | None) -> Decision:
        # From the raise time, not now: asked again after a restart, it keeps its deadline.
        policy = self.rules.timeout_policy(escalation, escalation.created_at, rule)
        self._emit_raised(escalation, policy)
        decision = await self.broker.ask(PendingEscalation(escalation, policy))
        self._emit(escalation.run_id, "decision", decision.to_event_fields(escalation))
        return decision

    def _emit_raised(self, escalation: Escalation, policy: TimeoutPolicy) -> None:
        self._emit(escalation.run_id, "human_escalation", escalation_event_fields(escalation, policy))


def escalation_event_fields(escalation: Escalation, policy: TimeoutPolicy) -> dict[str, Any]:
    """The contract's `human_escalation` event fields."""
    on_timeout = policy.on_timeout.value
    if policy.on_timeout is OnTimeout.OPTION:
        on_timeout = f"option:{policy.option_id}"
    return {
        "id": escalation.id,
        "taskId": escalation.task_id,
        "agent": escalation.agent,
        "reason": escalation.reason.value,
        "question": escalation.question,
        "context": escalation.context,
        "options": [
            {"id": o.id, "label": o.label, "description": o.description, "recommended": o.recommended}
            for o in escalation.options
        ],
        "allowAgentDecision": escalation.allow_agent_decision,
        "timeout": policy.timeout_seconds if policy.deadline is not None else None,
        "onTimeout": on_timeout,
        "origin": escalation.origin.value,
    }


def _rule_decision(escalation: Escalation, rule: Rule, now: float) -> Decision:
    if rule.action is Action.ALLOW:
        response, stops = Response(ResponseType.AGENT_DECIDE), False
    else:  # deny: skip; stop: skip and end the task
        response, stops = Response(ResponseType.SKIP), rule.action is Action.STOP
    return Decision(escalation.id, response, ResolvedBy.RULE, now, f"decided by {_rule_name(rule)}", stops)


def _rule_name(rule: Rule | None) -> str:
    return rule.describe() if rule else "the rules"


def _tool_escalation(run_id: str, task: str, agent: str, tool: str, args: dict[str, Any]) -> Escalation:
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    return Escalation(
        id="",
        task_id=task,
        run_id=run_id,
        agent=agent,
        reason=TOOL_APPROVAL_REASON,
        question=f"Allow {agent} to call the tool {tool}?",
        context=f"{tool}({shown})",
        options=(Option(APPROVE, f"Approve: run {tool}"), Option(DENY, "Deny: refuse this call")),
        origin=Origin.TOOL_APPROVAL,
    )


def _tool_result(tool: str, decision: Decision) -> ToolVerdict:
    """Only an explicit `approve` runs the tool; everything else is a refusal (fail closed)."""
    r = decision.response
    extra = f" Additional instructions: {r.additional_instructions}" if r.additional_instructions else ""
    if r.response_type is ResponseType.OPTION and r.selected_option == APPROVE:
        return ToolVerdict(CONFIRMED, f"Approved by {decision.resolved_by.value}.{extra}", decision)
    why = f" The answer was: {r.text_response}" if r.response_type is ResponseType.TEXT else ""
    if decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT:
        why = f" {decision.note}."
    return ToolVerdict(DENIED, f"The tool call {tool} was denied ({decision.resolved_by.value}).{why}{extra}", decision)
