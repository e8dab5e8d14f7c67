"""An ACP agent's `session/request_permission` as a tool approval on the desk.

The rules see the tool call as `TITLE(raw input)`: a rule that allows (or a taught allow) picks
the agent's first allow option at once, one that denies its first reject option, `stop` ends the
task; any other call (no rule, `ask_user`, `requireConfirmation`) goes to a person through the
one wait (engine/runtime/human.py), with the agent's own options as the escalation's options
(each option's ACP kind is its description). The person's option goes back to the agent; an
`approve` / `deny` answer (`escalate answer --approve`, a batch, a taught rule settling it) is
its first allow / reject option. Anything else, or nobody answering, is a reject (fail closed).
A person choosing an `allow_always` / `reject_always` option teaches the rule that allows /
denies exactly this call from then on.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from engine.escalation.desk import CONFIRMED, DENIED, TOOL_APPROVAL_REASON, Gate, ToolVerdict
from engine.kernel.model import Decision, Escalation, Option, Origin, PendingEscalation, ResolvedBy, TimeoutPolicy
from engine.kernel.responses import APPROVE
from engine.runtime.human import settle_tool, wait

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")
MAX_SHOWN = 4000  # characters of the raw input shown in the pane's context
MAX_OPTIONS = 20  # of the agent's options shown (all are still honoured by approve / deny)
MAX_LABEL = 200


def call_args(raw_input: Any) -> dict[str, Any]:
    """The call's raw input as the rules' arguments (an object as it is, anything else wrapped)."""
    if isinstance(raw_input, dict):
        return {str(k): v for k, v in raw_input.items()}
    return {} if raw_input is None else {"input": raw_input}


def first_of(options: Sequence[Any], kinds: tuple[str, ...]) -> Any | None:
    """The agent's first option of one of `kinds`, in `kinds`' order of preference."""
    for kind in kinds:
        found = next((o for o in options if str(o.kind) == kind), None)
        if found is not None:
            return found
    return None


def chosen(options: Sequence[Any], decision: Decision) -> Any | None:
    """The agent's option a decision stands for; None: reject (no option of that kind either)."""
    selected = decision.response.selected_option
    exact = next((o for o in options if o.option_id == selected), None)
    if exact is not None:
        return exact
    if selected == APPROVE:
        return first_of(options, ALLOW_KINDS)
    return first_of(options, REJECT_KINDS)  # deny, skip, text, agent_decide, a timeout: fail closed


def escalation_for(run: "RunState", agent: str, tool_call: Any, options: Sequence[Any], tool: str,
                   args: dict[str, Any]) -> Escalation:
    kind = str(tool_call.kind) if tool_call.kind else "other"
    lines = [f"kind: {kind}"]
    for place in (tool_call.locations or [])[:10]:
        lines.append(f"location: {place.path}" + (f":{place.line}" if place.line else ""))
    if tool_call.raw_input is not None:
        shown = json.dumps(tool_call.raw_input, ensure_ascii=False, sort_keys=True, default=str)
        lines.append(f"input: {shown[:MAX_SHOWN]}" + (" ..." if len(shown) > MAX_SHOWN else ""))
    return Escalation(
        id="", task_id=run.task, run_id=run.run_id, agent=agent, reason=TOOL_APPROVAL_REASON,
        question=f"Allow {agent} to run: {tool}?", context="\n".join(lines),
        options=tuple(Option(o.option_id, o.name[:MAX_LABEL], str(o.kind)) for o in options[:MAX_OPTIONS]),
        origin=Origin.TOOL_APPROVAL,
    )


async def decide_permission(run: "RunState", agent: str, tool_call: Any, options: Sequence[Any]) -> Any | None:
    """The option the agent gets for its permission request (None: the request is cancelled:
    it offered no option that fits). A rule that stops the task raises StopTask."""
    tool = (tool_call.title or tool_call.tool_call_id or "tool").strip()[:200]
    args = call_args(tool_call.raw_input)
    verdict = run.desk.tool_verdict(run.task, tool, args)
    if verdict.gate is Gate.ALLOW and verdict.rule is None:
        verdict = ToolVerdict(Gate.ASK)  # the agent asked: with no rule about it, a person answers
    if verdict.gate is not Gate.ASK:
        outcome = await settle_tool(run, agent, tool, args, verdict)
        return first_of(options, ALLOW_KINDS if outcome.runs else REJECT_KINDS)
    escalation = escalation_for(run, agent, tool_call, options, tool, args)
    decision = await wait(run, lambda: run.desk.ask_tool(escalation, verdict, tool, args))
    option = chosen(options, decision)
    allowed = option is not None and str(option.kind) in ALLOW_KINDS
    run.emit("tool_call", agent=agent, tool=tool, args=args, verdict=CONFIRMED if allowed else DENIED,
             acpOption=option.option_id if option is not None else None)
    if option is not None and str(option.kind).endswith("_always") and decision.resolved_by is ResolvedBy.HUMAN:
        _teach(run, replace(escalation, id=decision.escalation_id), tool, args, allowed)
    return option


def _teach(run: "RunState", escalation: Escalation, tool: str, args: dict[str, Any], allow: bool) -> None:
    """`allow_always` / `reject_always`: the narrowest rule for exactly this call, saved where the
    run's taught rules go (its --rules file, else the workspace's .escalate/rules.yaml)."""
    from engine.escalation.teaching import TeachError, propose, teach
    from rules.book import RuleBook
    from rules.model import Action

    pending = PendingEscalation(escalation, TimeoutPolicy(None), {"tool": tool, "args": args})
    source = Path(run.desk.rules.source)
    explicit = source if source.is_file() and source.name != "default.yaml" else None
    book = RuleBook(explicit=explicit, workspace=run.workspace.root)
    try:
        rule, _ = teach(run.desk, book, propose(pending, Action.ALLOW if allow else Action.DENY))
    except (TeachError, OSError) as exc:
        run.emit("log", message=f"{escalation.agent}: no rule taught from {escalation.id}: {exc}", level="warning")
        return
    run.emit("log", message=f"{escalation.agent}: taught a rule from {escalation.id}: {rule.describe()}")
