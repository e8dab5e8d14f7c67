"""The escalation desk: rules first, then, when a person must answer, the broker.

Every agent escalation (JSON reply, ask tool, flow statement) goes through `decide`. A tool call
gets its verdict once (`tool_verdict`, a typed `ToolVerdict`), and `settle_tool` turns that
verdict into what happens to the call (a `ToolCallOutcome`), asking a person when the verdict
says so. Both raise on the broker through `_ask_person` and emit the contract's events; the run
side of a wait (its status, paused timeouts, children handing waits up) is
engine/runtime/human.py.
Rule semantics left open by the contract (docs/escalation.md): `allow` resolves at once as
agent_decide, `deny` as skip, `stop` stops the task; `alwaysAsk` turns `allow` into asking.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Awaitable, Callable

from engine.escalation.broker import APPROVE, DENY, EscalationBroker
from engine.kernel.clock import Clock
from engine.escalation.edits import EditCheck, object_edit
from engine.kernel.model import (
    ASKED_BY,
    Audit,
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
from engine.escalation.protocol import decider
from engine.escalation.verdict import Gate, ToolVerdict, denial, gate_of, tool_verdict
from engine.escalation.verdict import rule_name as _rule_name
from engine.kernel.responses import kind_of
from rules.model import Action, AskedBy, Rule, Rules, switch_key

Emit = Callable[[str, str, dict[str, Any]], None]  # (run_id, event type, fields)
# `record(name, fn)`: `fn(key)` run once as a recorded step (replayed from its record after a
# restart), `key` the step's id, unique in the database (engine/durable/steps.py keyed_step).
RecordStep = Callable[[str, Callable[[str | None], Awaitable[Any]]], Awaitable[Any]]


async def unrecorded(name: str, fn: Callable[[str | None], Awaitable[Any]]) -> Any:
    """A RecordStep for runs that are not durable: just run it, with no key."""
    return await fn(None)

# The contract's `tool_call` verdicts.
ALLOWED, CONFIRMED, DENIED = "allowed", "confirmed", "denied"

TOOL_APPROVAL_REASON = Reason.SECURITY_CONCERN
_ids = itertools.count(1)


def new_escalation_id() -> str:
    """Unique in the process (one broker serves every run of the process); durable runs use
    their recorded step's key instead, unique in the database and the same on replay."""
    return f"esc-{next(_ids)}"


async def minted(escalation: Escalation, clock: Clock, record: RecordStep,
                 raise_now: Callable[[Escalation], Escalation] | None = None) -> Escalation:
    """Give an escalation raised without an id its id and raise time, as a recorded step: after
    a restart the run asks again under the same id, with the same deadline. `raise_now` records
    it as raised (for the consoles) inside that step (`record`), right after the id and time are made,
    rather than after the step's own record: with many runs writing, that record can wait
    long. It returns the escalation as recorded (its first raise time, when a step that
    crashed before its record runs again)."""
    if escalation.id:
        escalation = escalation if escalation.created_at else replace(escalation, created_at=clock.now())
        return raise_now(escalation) if raise_now is not None else escalation

    async def mint(key: str | None) -> list[Any]:
        made = replace(escalation, id=key or new_escalation_id(), created_at=clock.now())
        if raise_now is not None:
            made = raise_now(made)
        return [made.id, made.created_at]

    esc_id, created = await record("escalation", mint)
    return replace(escalation, id=esc_id, created_at=created)


@dataclass(frozen=True)
class ToolCallOutcome:
    """What happens to a tool call: it runs (`allowed`, `confirmed`), or not (`denied`, or
    `stops` the task), with what the agent is told, the person's decision if one was taken, and
    the arguments they approved when they edited them (the tool runs with those)."""

    verdict: str  # ALLOWED, CONFIRMED or DENIED (the contract's tool_call verdicts)
    message: str = ""
    decision: Decision | None = None
    args: dict[str, Any] | None = None
    stops: bool = False  # denied, and the task ends

    @property
    def runs(self) -> bool:
        return self.verdict in (ALLOWED, CONFIRMED)


class EscalationDesk:
    def __init__(self, broker: EscalationBroker, rules: Rules, clock: Clock, emit: Emit | None = None,
                 check_edit: EditCheck = object_edit, record: RecordStep = unrecorded) -> None:
        self.broker = broker
        self.check_edit = check_edit  # the tools' own check of edited arguments (the engine's)
        self.record = record  # how an escalation's id and raise time are recorded (durable runs)
        self.rules = rules
        self.clock = clock
        self._emit = emit or (lambda run_id, type_, fields: None)
        self.hits: Counter[tuple[str, str, str]] = Counter()  # rule_key -> times it matched here

    # -- agent escalations ----------------------------------------------------------------------

    async def decide(self, escalation: Escalation) -> Decision:
        """Resolve an agent's escalation: by a rule at once, or by a human (or their stand-in:
        answers file, timeout default) through the broker. A stopping decision has
        `stops_task` set; the caller ends the task."""
        rule = self._count(self.rules.match_escalation(escalation))  # on its text: no id or time needed
        action = rule.action if rule else Action.ASK_USER
        override = self.rules.override(escalation.task_id)
        if action is Action.ALLOW and override is not None and override.always_ask:
            action = Action.ASK_USER
        if action is Action.ASK_USER:
            return await self._ask_person(escalation, rule, self.rules.asked_by(escalation.task_id, rule, tool=False))
        assert rule is not None  # only a matched rule can allow, deny or stop
        escalation = await minted(escalation, self.clock, self.record)
        self._emit_raised(escalation, TimeoutPolicy(None))
        decision = _rule_decision(escalation, rule, self.clock.now())
        self._emit(escalation.run_id, "decision", decision.to_event_fields(escalation))
        return decision

    # -- tool gating ------------------------------------------------------------------------------

    def tool_verdict(self, task: str, tool: str, args: dict[str, Any]) -> ToolVerdict:
        """What the rules say about a tool call, with the rule that decided (nothing counted:
        the console previews edits with it)."""
        return tool_verdict(self.rules, task, tool, args)

    def _gate_of(self, task: str, rule: Rule | None) -> Gate:
        return gate_of(self.rules, task, rule)

    async def settle_tool(self, run_id: str, task: str, agent: str, tool: str, args: dict[str, Any],
                          verdict: ToolVerdict) -> ToolCallOutcome:
        """What `verdict` (this call's, from `tool_verdict`) makes of the call, after a person
        when it says ASK (the caller does that wait: engine/runtime/human.py); emits `tool_call`.
        Only `runs` outcomes may run it (with `args` when the person edited them)."""
        rule = self._count(verdict.rule)
        if verdict.gate is Gate.ALLOW:
            result = ToolCallOutcome(ALLOWED)
        elif verdict.gate is Gate.DENY:
            result = ToolCallOutcome(DENIED, denial(tool, verdict.by))
        elif verdict.gate is Gate.STOP:
            result = ToolCallOutcome(DENIED, f"The tool call {tool} stopped the task ({verdict.by}).", stops=True)
        else:
            escalation = _tool_escalation(run_id, task, agent, tool, args)
            if rule is not None and rule.why:  # a shell command rules cannot check: say why a human is asked
                escalation = replace(escalation, context=f"{escalation.context}\n{rule.why}")
            asked_by = self.rules.asked_by(task, rule, tool=True)
            decision = await self._ask_person(escalation, rule, asked_by, {"tool": tool, "args": args})
            result = self._edited_call_checked(task, tool, _tool_result(tool, decision))
        fields: dict[str, Any] = {"agent": agent, "tool": tool, "args": args, "verdict": result.verdict}
        if result.args is not None:
            fields["editedArgs"] = result.args
        if result.stops:
            fields["stopped"] = True  # the contract's verdicts have no "stop": denied, and the task ends
        self._emit(run_id, "tool_call", fields)
        return result

    async def ask_tool(self, escalation: Escalation, verdict: ToolVerdict, tool: str, args: dict[str, Any]) -> Decision:
        """A tool approval raised with the asker's own options (an ACP agent's permission request,
        engine/runtime/acp/permissions.py): a person decides, as for `settle_tool`'s ASK; the
        caller reads the chosen option and emits `tool_call`."""
        rule = self._count(verdict.rule)
        asked_by = self.rules.asked_by(escalation.task_id, rule, tool=True)
        return await self._ask_person(escalation, rule, asked_by, {"tool": tool, "args": args})

    def _edited_call_checked(self, task: str, tool: str, result: ToolCallOutcome) -> ToolCallOutcome:
        """Approved with edited arguments: checked once, here. They must fit the tool's schema
        (else nothing runs), then the rules see the edited call as it will run, and a rule that
        denies or stops it wins (the person approved it; asking again would ask them twice)."""
        if result.verdict != CONFIRMED or result.args is None:
            return result
        edited = self.check_edit(tool, result.args)
        if isinstance(edited, str):
            return replace(result, verdict=DENIED, message=f"The edited call {tool} did not run: invalid arguments ({edited}).")
        result = replace(result, args=edited)
        rule = self._count(self.rules.match_tool(task, tool, edited))
        gate = self._gate_of(task, rule)
        if gate is Gate.DENY:
            return replace(result, verdict=DENIED, message=denial(tool, f"{_rule_name(rule)}, on the edited arguments"))
        if gate is Gate.STOP:
            return replace(result, verdict=DENIED, message=f"The edited call {tool} stopped the task ({_rule_name(rule)}).",
                           stops=True)
        return result

    # -- rules taught while requests wait --------------------------------------------------------

    def set_rules(self, rules: Rules) -> None:
        self.rules = rules

    def release_waiting(self, decides: Callable[[Rule], bool]) -> list[Decision]:
        """The pending escalations a rule picked by `decides` now settles (a rule just taught):
        each gets its own decision (resolvedBy rule, naming the rule), all in one transaction.
        A rule that would send a request to a person again leaves it waiting."""
        now = self.clock.now()
        decisions = []
        for pending in self.broker.pending():
            esc = pending.escalation
            if esc.origin is Origin.TOOL_APPROVAL:
                tool, args = pending.extra.get("tool"), pending.extra.get("args")
                if not isinstance(tool, str) or not isinstance(args, dict):
                    continue  # raised before approvals carried their call
                rule = self.rules.match_tool(esc.task_id, tool, args)
                gate = self._gate_of(esc.task_id, rule)
                if rule is None or not decides(rule) or gate not in (Gate.ALLOW, Gate.DENY):
                    continue
                response = Response(ResponseType.OPTION, selected_option=APPROVE if gate is Gate.ALLOW else DENY)
                decisions.append(Decision(esc.id, response, ResolvedBy.RULE, now, f"decided by {_rule_name(rule)}",
                                          audit=Audit(rule=_rule_name(rule))))
            else:
                rule = self.rules.match_escalation(esc)
                override = self.rules.override(esc.task_id)
                if rule is None or not decides(rule) or rule.action is Action.ASK_USER:
                    continue
                if rule.action is Action.ALLOW and override is not None and override.always_ask:
                    continue
                decisions.append(_rule_decision(esc, rule, now))
        applied = self.broker.apply_many(decisions)
        for decision in applied:
            self._count(self._rule_of(decision))
        return applied

    def _rule_of(self, decision: Decision) -> Rule | None:
        return next((r for _, r in self.rules.all_rules() if _rule_name(r) == decision.audit.rule), None)

    def _count(self, rule: Rule | None) -> Rule | None:
        if rule is not None and not rule.why:
            self.hits[rule_key(rule)] += 1
        return rule

    # -- asking a person ----------------------------------------------------------------------------

    async def _ask_person(self, escalation: Escalation, rule: Rule | None, asked_by: AskedBy,
                          extra: dict[str, Any] | None = None) -> Decision:
        """`asked_by` travels with the escalation (`extra["askedBy"]`): the consoles say why a
        person is asked; the override switches in it count as matches."""
        for task, switch in asked_by.switches:
            self.hits[switch_key(task, switch)] += 1

        def pending_of(esc: Escalation) -> PendingEscalation:
            # From the raise time, not now: asked again after a restart, it keeps its deadline.
            return PendingEscalation(esc, self.rules.timeout_policy(esc, esc.created_at, rule),
                                     {**(extra or {}), **({ASKED_BY: asked_by.text} if asked_by.text else {})})

        escalation = await minted(escalation, self.clock, self.record, lambda esc: self.broker.record_raised(pending_of(esc)))
        pending = pending_of(escalation)
        self._emit_raised(escalation, pending.policy)
        decision = await self.broker.ask(pending)
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
    return Decision(escalation.id, response, ResolvedBy.RULE, now, f"decided by {_rule_name(rule)}", stops,
                    Audit(rule=_rule_name(rule)))


def rule_key(rule: Rule) -> tuple[str, str, str]:
    """A rule's identity across reloads of its file (its line moves when another is removed)."""
    return (rule.file, rule.pattern.source, rule.action.value)


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


def _tool_result(tool: str, decision: Decision) -> ToolCallOutcome:
    """Only an explicit `approve` runs the tool; everything else is a refusal (fail closed)."""
    r = decision.response
    extra = f" Additional instructions: {r.additional_instructions}" if r.additional_instructions else ""
    kind = kind_of(r, Origin.TOOL_APPROVAL)
    if kind.runs_tool:
        if r.edited_args is not None:
            shown = json.dumps(r.edited_args, ensure_ascii=False, sort_keys=True, default=str)
            return ToolCallOutcome(CONFIRMED, f"Approved by {decision.resolved_by.value} with edited arguments {shown}.{extra}",
                                   decision, dict(r.edited_args))
        return ToolCallOutcome(CONFIRMED, f"Approved by {decision.resolved_by.value}.{extra}", decision)
    why = f" The answer was: {r.text_response}" if kind.field == "text_response" else ""
    if decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT and decision.note:
        why = f" {decision.note[:1].upper()}{decision.note[1:]}."
    by = decision.audit.rule if decision.resolved_by is ResolvedBy.RULE and decision.audit.rule else decider(decision.resolved_by)
    return ToolCallOutcome(DENIED, f"{denial(tool, by)}{why}{extra}", decision)
