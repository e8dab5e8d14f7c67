"""The agent side of seed 004: how an agent asks, how we spot it, and what it hears back.

An agent asks for a human decision by replying with a JSON object carrying `"escalation":
true` (bare, in a fenced block, or amid prose), or by calling the ask tool. Agent output is
untrusted: a malformed or incomplete object is plain output, never an exception.
"""

from __future__ import annotations

import json
import math
from typing import Any

from engine.escalation.json_scan import json_values
from engine.kernel.model import (
    Decision,
    Escalation,
    Option,
    Origin,
    Reason,
    ResolvedBy,
)
from engine.kernel.responses import kind_of

ASK_TOOL_NAME = "ask_human"

PROTOCOL_NOTE = f"""\
## Asking a human
When you face an important decision you should not take alone (an architecture choice, a
breaking change, an unclear requirement, failing tests, a security concern, a cost warning, a
file conflict, a dependency issue):
1. STOP working on the task.
2. Reply with ONLY this JSON (or call the `{ASK_TOOL_NAME}` tool with the same fields, if you
   have it):
{{
  "escalation": true,
  "reason": "architecture_decision",
  "question": "Your clear, concise question",
  "context": "Relevant context",
  "options": [
    {{"id": "opt1", "label": "Option 1", "recommended": true}},
    {{"id": "opt2", "label": "Option 2"}}
  ],
  "allowAgentDecision": false
}}
`reason` is one of: {", ".join(r.value for r in Reason)}. Add "timeout" (seconds) if the
question should not wait forever.
3. WAIT for the answer: it arrives as your next input. Then continue accordingly."""

_TRUE_WORDS = {"true", "yes", "1"}


def find_escalation(text: object) -> dict[str, Any] | None:
    """The first JSON object in `text` with `"escalation": true`, or None.

    Bare, fenced or amid prose, nested in another object too. Linear in the text and bounded
    (engine.escalation.json_scan): only objects containing the key `"escalation"` are decoded,
    within the first MAX_SCAN_CHARS characters. Never raises.
    """
    if not isinstance(text, str):
        return None
    for value in json_values(text, "{", needle='"escalation"'):
        found = _first_escalation(value)
        if found is not None:
            return found
    return None


def _first_escalation(value: Any) -> dict[str, Any] | None:
    """The first object (in text order) with a true `escalation`, inside a decoded value."""
    stack = [value]  # iterative: a decoded value may nest as deep as the decoder allows
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if _truthy(item.get("escalation")):
                return item
            stack.extend(reversed(item.values()))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return None


def to_escalation(
    obj: dict[str, Any],
    *,
    id: str,
    task_id: str,
    run_id: str,
    agent: str,
    origin: Origin = Origin.AGENT_TEXT,
    created_at: float = 0.0,
) -> Escalation:
    """Build an Escalation from the protocol object (or the ask tool's arguments).

    Tolerant: an unknown reason becomes `other`; options may be objects or plain strings;
    missing or duplicate ids are made unique; only the first `recommended` counts; a timeout
    that is not a non-negative finite number is ignored.
    """
    question = _text(obj.get("question"))
    context = _text(obj.get("context"))
    return Escalation(
        id=id,
        task_id=task_id,
        run_id=run_id,
        agent=agent,
        reason=Reason.parse(obj.get("reason", "other")),
        question=question or context or "(the agent gave no question)",
        context=context if question else "",
        options=_options(obj.get("options")),
        allow_agent_decision=_truthy(obj.get("allowAgentDecision", obj.get("allow_agent_decision"))),
        timeout=_timeout(obj.get("timeout")),
        origin=origin,
        created_at=created_at,
    )


_DECIDERS = {
    ResolvedBy.HUMAN: "a human",
    ResolvedBy.ANSWERS_FILE: "the answers file (on behalf of a human)",
    ResolvedBy.RULE: "an escalation rule",
    ResolvedBy.TIMEOUT_DEFAULT: "the timeout default",
}


def decider(resolved_by: ResolvedBy) -> str:
    """Who decided, in words: "a human", "the timeout default", ..."""
    return _DECIDERS[resolved_by]


def decision_message(escalation: Escalation, decision: Decision) -> str:
    """The text the asking agent receives as its next input."""
    r = decision.response
    lines = [f"Decision on your escalation ({escalation.reason.value}): {escalation.question}"]
    if decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT:
        lines.append(f"Nobody answered in time ({decision.note or 'no answer'}).")
    lines.append(kind_of(r, escalation.origin).tell(escalation, r))
    if r.additional_instructions:
        lines.append(f"Additional instructions: {r.additional_instructions}")
    if decision.stops_task:
        lines.append("The task is stopped.")
    lines.append(f"Decided by: {_DECIDERS[decision.resolved_by]}.")
    return "\n".join(lines)


def decision_value(escalation: Escalation, decision: Decision) -> str:
    """The answer as one short text: the value of a flow's `escalate to human` statement."""
    r = decision.response
    return kind_of(r, escalation.origin).value(escalation, r)


# -- tolerant field readers ------------------------------------------------------------------


def _truthy(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in _TRUE_WORDS
    return False


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return "\n".join(_text(v) for v in value)
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value)


def _timeout(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _options(value: object) -> tuple[Option, ...]:
    if isinstance(value, dict):  # {"opt1": "Yes", ...}
        value = [{"id": k, "label": v} for k, v in value.items()]
    if not isinstance(value, list):
        return ()
    options: list[Option] = []
    seen: set[str] = set()
    recommended_taken = False
    for n, raw in enumerate(value, start=1):
        if isinstance(raw, dict):
            oid = _text(raw.get("id")) or f"opt{n}"
            label = _text(raw.get("label")) or _text(raw.get("description")) or oid
            description = _text(raw.get("description")) if raw.get("label") else ""
            recommended = _truthy(raw.get("recommended"))
        elif raw is None:
            continue
        else:
            oid, label, description, recommended = f"opt{n}", _text(raw), "", False
        base, k = oid, 2
        while oid in seen:
            oid, k = f"{base}_{k}", k + 1
        seen.add(oid)
        recommended = recommended and not recommended_taken
        recommended_taken = recommended_taken or recommended
        options.append(Option(oid, label, description, recommended))
    return tuple(options)
