"""What Claude Code's and Codex's hooks share: their input (a JSON object on stdin), the decision
JSON they read, and answering one hook call through the desk (engine/outside/core.py).

Both take `{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow" |
"deny", "permissionDecisionReason": ..., "updatedInput": {...}}}` for PreToolUse and
`{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow",
"updatedInput": {...}} | {"behavior": "deny", "message": ..., "interrupt": bool}}}` for
PermissionRequest (checked against Claude Code 2.1.328's own schema, docs/outside.md). Exit 0
with nothing printed is "no opinion"; any other code but 2 is a non-blocking error: the agent's
own permission applies. Never an approval from a bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engine.kernel.frozen import Frozen, replace

if TYPE_CHECKING:
    from engine.escalation.desk import ToolCallOutcome
    from engine.escalation.verdict import ToolVerdict
    from engine.outside.agents import Agent
    from engine.outside.session import Session
    from rules.model import Rules

MAX_INPUT_BYTES = 32 * 1024 * 1024  # a Write of a large file travels in tool_input
PRE_TOOL_USE, PERMISSION_REQUEST, NOTIFICATION = "PreToolUse", "PermissionRequest", "Notification"
EVENTS = (PRE_TOOL_USE, PERMISSION_REQUEST, NOTIFICATION)
# A PermissionRequest carries no tool_use_id: it is keyed by its call, and a decision on the same
# call this recent answers it again (the dialog that follows an approval at PreToolUse).
PERMISSION_REUSE_SECONDS = 120.0
WITHDRAWN = "Not run: the hook was stopped before anyone answered, and its request was withdrawn"


class BadInput(ValueError):
    """The hook's input cannot be used (one line, naming what is wrong)."""


class HookCall(Frozen):
    event: str
    session_id: str
    cwd: Path
    tool_name: str = ""
    tool_input: dict[str, Any] | None = None
    tool_use_id: str = ""
    agent: str | None = None  # a subagent's type name (Claude Code's `agent_type` with `agent_id`)
    message: str = ""  # a Notification's text, its title and its notification_type
    title: str = ""
    kind: str = ""

    def key(self, *, by_call: bool = False) -> str:
        """The idempotency key of this call's request: its tool_use_id, else (PermissionRequest
        has none; `by_call`: the agent asks twice about one call) the call itself."""
        if self.tool_use_id and not by_call:
            return self.tool_use_id
        import hashlib  # a call sent to a person only: loading OpenSSL costs a rule-decided call ~2 ms

        shown = json.dumps([self.tool_name, self.tool_input], sort_keys=True, ensure_ascii=True, default=str)
        return "permission:" + hashlib.sha256(shown.encode("ascii")).hexdigest()[:32]


def parse_call(raw: bytes) -> HookCall:
    """The hook call `raw` holds; BadInput (one line) when it cannot be used."""
    if len(raw) > MAX_INPUT_BYTES:
        raise BadInput(f"the hook input is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MB")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BadInput(f"the hook input is not UTF-8 (byte {exc.start})") from None
    except RecursionError:
        raise BadInput("the hook input is nested too deeply") from None
    except ValueError as exc:
        raise BadInput(f"the hook input is not JSON: {str(exc).splitlines()[0][:200]}") from None
    if not isinstance(data, dict):
        raise BadInput("the hook input is not a JSON object")
    event = _text(data, "hook_event_name")
    if event not in EVENTS:
        raise BadInput(f"hook_event_name {event[:80]!r} is not one of {', '.join(EVENTS)}")
    session = _text(data, "session_id")
    if not session or len(session) > 200:
        raise BadInput("session_id must be a text of 1 to 200 characters")
    cwd = _text(data, "cwd")
    project = Path(cwd) if cwd and "\x00" not in cwd else Path.cwd()
    if not project.is_absolute() or not project.is_dir():
        raise BadInput("cwd is not an existing absolute folder")
    agent = _text(data, "agent_type") if data.get("agent_id") else ""
    if event == NOTIFICATION:
        return HookCall(event, session, project, agent=agent[:100] or None, message=_text(data, "message"),
                        title=_text(data, "title"), kind=_text(data, "notification_type"))
    tool = _text(data, "tool_name")
    if not tool or len(tool) > 200:
        raise BadInput("tool_name must be a text of 1 to 200 characters")
    tool_input = data.get("tool_input")
    if not isinstance(tool_input, dict):
        raise BadInput("tool_input is not a JSON object")
    tool_use_id = _text(data, "tool_use_id")
    if event == PRE_TOOL_USE and not tool_use_id:
        raise BadInput("PreToolUse without tool_use_id")
    if len(tool_use_id) > 200:
        raise BadInput("tool_use_id is longer than 200 characters")
    return HookCall(event, session, project, tool, tool_input, tool_use_id, agent[:100] or None)


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name, "")
    if not isinstance(value, str):
        raise BadInput(f"{name} is not a text")
    return value


# -- decisions as the agent reads them ------------------------------------------------------------


def allow(event: str, reason: str, updated: dict[str, Any] | None = None, context: str = "") -> dict[str, Any]:
    """The call runs (with `updated` as its whole input when a person edited it); `context`
    reaches the model (a person's instructions with their approval)."""
    if event == PERMISSION_REQUEST:
        decision: dict[str, Any] = {"behavior": "allow"}
        if updated is not None:
            decision["updatedInput"] = updated
        return {"hookSpecificOutput": {"hookEventName": event, "decision": decision}}
    out: dict[str, Any] = {"hookEventName": event, "permissionDecision": "allow", "permissionDecisionReason": reason}
    if updated is not None:
        out["updatedInput"] = updated
    if context:
        out["additionalContext"] = context
    return {"hookSpecificOutput": out}


def deny(event: str, reason: str, *, stop: bool = False) -> dict[str, Any]:
    """The call does not run; `reason` is what the model reads. `stop`: a rule stops the task,
    so the agent stops too."""
    if event == PERMISSION_REQUEST:
        return {"hookSpecificOutput": {"hookEventName": event,
                                       "decision": {"behavior": "deny", "message": reason, "interrupt": stop}}}
    out: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                                  "permissionDecisionReason": reason}}
    if stop:
        out |= {"continue": False, "stopReason": reason}
    return out


def verdict_answer(event: str, verdict: "ToolVerdict", tool: str, *, stops: bool = True) -> dict[str, Any] | None:
    """What a rule's verdict (not ASK) says to the agent; None: no rule, no opinion. `stops`: the
    agent takes a stop with a denial (Codex refuses one: its call is denied, the task goes on)."""
    from engine.escalation.verdict import Gate, denial

    if verdict.rule is None and verdict.gate is Gate.ALLOW:
        return None
    if verdict.gate is Gate.ALLOW:
        return allow(event, f"allowed by {verdict.by}")
    if verdict.gate is Gate.STOP:
        return deny(event, f"The tool call {tool} stopped the task ({verdict.by}).", stop=stops)
    return deny(event, denial(tool, verdict.by))


def outcome_answer(event: str, outcome: "ToolCallOutcome", *, edits: bool = True, stops: bool = True) -> dict[str, Any]:
    """What a person's (or the default's) decision says to the agent. `edits`: the agent takes
    edited input; where it does not (Codex fails closed on updatedInput), an approval with edited
    arguments is refused, saying why. `stops`: as for verdict_answer."""
    if outcome.runs:
        if outcome.args is not None and not edits:
            return deny(event, "The person approved this call with edited arguments, which this agent cannot take: "
                               f"run this instead if it is still right: {json.dumps(outcome.args, ensure_ascii=False)}")
        instructions = _instructions(outcome)
        return allow(event, outcome.message, outcome.args, instructions)
    return deny(event, outcome.message, stop=outcome.stops and stops)


def _instructions(outcome: "ToolCallOutcome") -> str:
    r = outcome.decision.response if outcome.decision is not None else None
    return f"Instructions from the person who approved this call: {r.additional_instructions}" \
        if r is not None and r.additional_instructions else ""


# -- one hook call --------------------------------------------------------------------------------


class Asked(Frozen):
    """A hook call the rules send to a person: what its wait needs (ask_person)."""

    rules: "Rules"
    asker: "Session"
    verdict: "ToolVerdict"
    call: HookCall  # as the agent's request is keyed (see decide_by_rules)


def decide_by_rules(agent: "Agent", call: HookCall, *, rules_path: str | None,
                    task: str | None) -> tuple[dict[str, Any] | None, Asked | None]:
    """(the decision JSON, None) when the rules decide the call, or nothing is to be decided
    (the decision None: no opinion; a Notification is note_attention's); (None, what a person
    must decide) when the rules send it to a person, and for a PermissionRequest no rule decides
    (the agent was about to ask its person). Opens nothing and records nothing: a call a rule
    decides is not an event of the session's run (docs/outside.md), so this path imports no
    database and no asyncio. Raises RulesError (one line)."""
    from engine.escalation.verdict import Gate, ToolVerdict
    from engine.outside.session import Session, load_rules, tool_verdict

    if call.event == NOTIFICATION or call.tool_input is None:
        return None, None
    if agent.asks_twice and "description" in call.tool_input:
        # Codex (0.171) adds the model's justification to a PermissionRequest's input as
        # `description`, which its PreToolUse for the same call had not: the same call, one request.
        call = replace(call, tool_input={k: v for k, v in call.tool_input.items() if k != "description"})
    rules = load_rules(call.cwd, rules_path)
    asker = Session.of(agent.kind, call.session_id, call.cwd, task=task, agent=call.agent)
    verdict = tool_verdict(rules, asker, call.tool_name, call.tool_input)
    permission = call.event == PERMISSION_REQUEST
    if permission and verdict.rule is None and verdict.gate is Gate.ALLOW:
        verdict = ToolVerdict(Gate.ASK)
    if verdict.gate is Gate.ASK:
        return None, Asked(rules, asker, verdict, call)
    return _for_agent(agent, call, verdict_answer(call.event, verdict, call.tool_name, stops=agent.stops)), None


async def ask_person(agent: "Agent", asked: Asked, *, db: str | None,
                     deliver: Callable[[dict[str, Any] | None], None]) -> None:
    """`deliver(the decision JSON)` for a call decide_by_rules sent to a person, as soon as it
    is known: before the services close (the agent waits for the hook's end: `deliver` may end
    the process). It waits for a decision in the database, withdrawn if this process is
    stopped. Raises DatabaseError (one line)."""
    import asyncio

    from engine.outside.core import OutsideDesk, cancel_on_signals

    call = asked.call
    permission = call.event == PERMISSION_REQUEST
    desk = await OutsideDesk.open(asked.rules, db=db, identity=f"{agent.kind} hook")
    me = asyncio.current_task()
    assert me is not None
    undo = cancel_on_signals(me, watch_parent=True)
    withdrawn = False
    try:
        outcome = await desk.settle_tool(asked.asker, call.tool_name, call.tool_input or {}, asked.verdict,
                                         key=call.key(by_call=agent.asks_twice),
                                         reuse_within=PERMISSION_REUSE_SECONDS if permission or agent.asks_twice else None)
        undo()
        deliver(_for_agent(agent, call, outcome_answer(call.event, outcome, edits=agent.edits, stops=agent.stops)))
    except asyncio.CancelledError:
        if not agent.fails_open:
            raise
        withdrawn = True
    finally:
        undo()
        desk.close()
    if withdrawn:  # withdrawn (by now), yet the agent may be alive: a failed hook would let it run the call
        deliver(deny(call.event, WITHDRAWN))


def note_attention(agent: "Agent", call: HookCall, *, db: str | None, task: str | None) -> None:
    """A Notification (the session waits on its person): an attention event of the session's run,
    shown by the consoles open on the database. No opinion is given either way. Raises
    DatabaseError (one line)."""
    from engine.outside.core import note_attention as record
    from engine.outside.session import Session
    from engine.services.database import open_database

    database = open_database(db)
    try:
        record(database, Session.of(agent.kind, call.session_id, call.cwd, task=task, agent=call.agent),
               call.message, title=call.title, kind=call.kind)
    finally:
        database.close()


def _for_agent(agent: "Agent", call: HookCall, answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """An agent whose PreToolUse takes no allow is told nothing there: an approved call goes on
    to its own approval, whose PermissionRequest finds the same decision (keyed by the call)."""
    if _allows(answer) and call.event != PERMISSION_REQUEST and not agent.pre_tool_allow:
        return None
    return answer


def _allows(answer: dict[str, Any] | None) -> bool:
    out = (answer or {}).get("hookSpecificOutput", {})
    return out.get("permissionDecision") == "allow" or out.get("decision", {}).get("behavior") == "allow"
