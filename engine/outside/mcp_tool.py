"""The MCP tool `escalate_to_human`: its schemas, the hard check of its arguments, its result.

No MCP import here (engine/outside/mcp_server.py serves it). The arguments come from a model
through a client we did not write: every field is checked for type, size and characters, and
anything else is refused with one line naming the field, which the client shows the model as a
tool error (never a traceback). Nothing is coerced: a model that sends `"timeout": "120"` is told
so, rather than guessed at.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from engine.kernel.model import Decision, Escalation, Option, Origin, Reason

TOOL_NAME = "escalate_to_human"

MAX_QUESTION = 4_000
MAX_CONTEXT = 64_000
MAX_LABEL = 200
MAX_DESCRIPTION = 2_000
MAX_OPTIONS = 20
MAX_TIMEOUT = 30 * 24 * 3600.0  # a month: longer is no deadline at all (leave `timeout` out)
ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
REQUEST_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"

# C0 controls but tab and newline, DEL, C1, the bidirectional overrides and isolates, lone
# surrogates: a terminal obeys or cannot show them (engine/text_safety.py shows them as signs;
# here they are refused, so what a person reads is what the agent sent).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_ID = re.compile(ID_PATTERN)
_REQUEST_ID = re.compile(REQUEST_ID_PATTERN)

DESCRIPTION = (
    "Ask the human who supervises you for a decision and wait for it (it may take minutes or "
    "hours: the call reports progress while it waits). Use it for decisions you should not take "
    "alone: an architecture choice, a breaking change, an unclear requirement, failing tests, a "
    "security concern, a cost warning, a file conflict, a dependency issue. Give options when "
    "there are clear alternatives. Pass a unique requestId to be able to call again with the "
    "same arguments after a disconnection and get the same request (and its decision).")

_TEXT = {"type": "string"}
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "enum": [r.value for r in Reason],
                   "description": "why a human is needed"},
        "question": {**_TEXT, "minLength": 1, "maxLength": MAX_QUESTION,
                     "description": "the question, clear and short"},
        "context": {**_TEXT, "maxLength": MAX_CONTEXT, "description": "what the human needs to know to decide"},
        "options": {
            "type": "array", "maxItems": MAX_OPTIONS,
            "description": "the choices, if any (the human may also answer in words, skip, or let you decide)",
            "items": {
                "type": "object",
                "properties": {
                    "id": {**_TEXT, "pattern": ID_PATTERN},
                    "label": {**_TEXT, "minLength": 1, "maxLength": MAX_LABEL},
                    "description": {**_TEXT, "maxLength": MAX_DESCRIPTION},
                    "recommended": {"type": "boolean"},
                },
                "required": ["id", "label"],
                "additionalProperties": False,
            },
        },
        "allowAgentDecision": {"type": "boolean",
                               "description": "nobody answering in time lets you decide yourself"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_TIMEOUT,
                    "description": "seconds to wait before the default applies (default: the rules')"},
        "requestId": {**_TEXT, "pattern": REQUEST_ID_PATTERN,
                      "description": "your idempotency key: the same id asks the same request again"},
    },
    "required": ["reason", "question"],
    "additionalProperties": False,
}

_NULLABLE_TEXT = {"type": ["string", "null"]}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "taskId": _TEXT,
        "escalationId": _TEXT,
        "responseType": {"type": "string", "enum": ["option", "text", "skip", "agent_decide"]},
        "selectedOption": _NULLABLE_TEXT,
        "selectedLabel": _TEXT,
        "textResponse": _NULLABLE_TEXT,
        "additionalInstructions": _NULLABLE_TEXT,
        "resolvedBy": {"type": "string", "enum": ["human", "answers_file", "rule", "timeout_default"]},
        "stopsTask": {"type": "boolean"},
        "note": _TEXT,
    },
    "required": ["taskId", "escalationId", "responseType", "resolvedBy"],
}


class BadArguments(ValueError):
    """The arguments cannot be asked: one line naming the field."""


@dataclass(frozen=True)
class Ask:
    """Checked arguments: an escalation (its id, run, task and agent are the desk's to set) and
    the client's idempotency key."""

    escalation: Escalation
    request_id: str | None


def parse(arguments: object) -> Ask:
    """The checked arguments, or BadArguments."""
    if not isinstance(arguments, dict):
        raise BadArguments(f"the arguments must be an object, not {_kind(arguments)}")
    unknown = sorted(set(arguments) - set(INPUT_SCHEMA["properties"]))
    if unknown:
        raise BadArguments(f"unknown argument {_quoted(unknown[0])} (expected: {', '.join(INPUT_SCHEMA['properties'])})")
    reason = arguments.get("reason")
    if not isinstance(reason, str) or reason not in {r.value for r in Reason}:
        raise BadArguments(f"reason: expected one of {', '.join(r.value for r in Reason)}, not {_shown(reason)}")
    question = _text(arguments, "question", MAX_QUESTION, required=True)
    context = _text(arguments, "context", MAX_CONTEXT)
    allow = arguments.get("allowAgentDecision", False)
    if not isinstance(allow, bool):
        raise BadArguments(f"allowAgentDecision: expected true or false, not {_kind(allow)}")
    request_id = arguments.get("requestId")
    if request_id is not None and not (isinstance(request_id, str) and _REQUEST_ID.match(request_id)):
        raise BadArguments("requestId: expected 1-128 letters, digits, '_', '.', ':' or '-' "
                           f"(starting with a letter or digit), not {_shown(request_id)}")
    escalation = Escalation(id="", task_id="", run_id="", agent="", reason=Reason(reason), question=question,
                            context=context, options=_options(arguments.get("options")), allow_agent_decision=allow,
                            timeout=_timeout(arguments.get("timeout")), origin=Origin.AGENT_TOOL)
    return Ask(escalation, request_id)


def result(task: str, escalation: Escalation, decision: Decision) -> dict[str, Any]:
    """Seed 004's EscalationResponse (`taskId`, `responseType`, `selectedOption`, `textResponse`,
    `additionalInstructions`) plus `resolvedBy`, as the `decision` event has them (and the
    chosen option's label, `stopsTask`, and why a default applied, when there are)."""
    fields = decision.to_event_fields(escalation)
    out: dict[str, Any] = {"taskId": task, "escalationId": fields.pop("id")}
    out.update((k, fields[k]) for k in ("responseType", "selectedOption", "textResponse", "additionalInstructions",
                                        "resolvedBy", "selectedLabel", "stopsTask") if k in fields)
    if decision.note:
        out["note"] = decision.note
    return out


# -- field checks --------------------------------------------------------------------------------


def _text(arguments: dict[str, Any], name: str, limit: int, *, required: bool = False, where: str = "") -> str:
    value = arguments.get(name, None if required else "")
    label = f"{where}{name}"
    if not isinstance(value, str):
        raise BadArguments(f"{label}: expected a string, not {_kind(value)}")
    if required and not value.strip():
        raise BadArguments(f"{label}: must not be empty")
    if len(value) > limit:
        raise BadArguments(f"{label}: {len(value)} characters, at most {limit}")
    bad = _UNSAFE.search(value)
    if bad is not None:
        raise BadArguments(f"{label}: control character U+{ord(bad.group()):04X} at position {bad.start()} "
                           "(send plain text: newlines and tabs only)")
    return value


def _options(value: object) -> tuple[Option, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise BadArguments(f"options: expected an array, not {_kind(value)}")
    if len(value) > MAX_OPTIONS:
        raise BadArguments(f"options: {len(value)} options, at most {MAX_OPTIONS}")
    options: list[Option] = []
    for n, raw in enumerate(value):
        where = f"options[{n}]."
        if not isinstance(raw, dict):
            raise BadArguments(f"options[{n}]: expected an object with id and label, not {_kind(raw)}")
        unknown = sorted(set(raw) - {"id", "label", "description", "recommended"})
        if unknown:
            raise BadArguments(f"{where}{_quoted(unknown[0])}: unknown (expected: id, label, description, recommended)")
        oid = raw.get("id")
        if not (isinstance(oid, str) and _ID.match(oid)):
            raise BadArguments(f"{where}id: expected 1-64 letters, digits, '_', '.', ':' or '-', not {_shown(oid)}")
        if any(o.id == oid for o in options):
            raise BadArguments(f"{where}id: {oid!r} is already the id of an earlier option")
        recommended = raw.get("recommended", False)
        if not isinstance(recommended, bool):
            raise BadArguments(f"{where}recommended: expected true or false, not {_kind(recommended)}")
        if recommended and any(o.recommended for o in options):
            raise BadArguments(f"{where}recommended: only one option can be recommended")
        options.append(Option(oid, _text(raw, "label", MAX_LABEL, required=True, where=where),
                              _text(raw, "description", MAX_DESCRIPTION, where=where), recommended))
    return tuple(options)


def _timeout(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadArguments(f"timeout: expected a number of seconds, not {_kind(value)}")
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT:
        raise BadArguments(f"timeout: expected seconds above 0 and at most {MAX_TIMEOUT:.0f}, not {value}")
    return float(value)


def _kind(value: object) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "an array", dict: "an object"}
    return names.get(type(value), "a value of another type")


def _shown(value: object) -> str:
    """A hostile value named in a message: its kind, or its first characters (quoted, escaped)."""
    if isinstance(value, str):
        return _quoted(value)
    return _kind(value)


def _quoted(text: str) -> str:
    return repr(text[:40] + ("..." if len(text) > 40 else ""))
