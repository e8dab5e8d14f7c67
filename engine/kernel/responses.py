"""The one table of response kinds: every way a person (or a rule, or a default) can answer.

One row per kind: what the pane shows, which field of the answer it needs, its flag in `escalate
answer`, what the asking agent is told, whether it counts as "approved", how it is checked.
The pane, the CLI, answers files, the protocol, the audit, validation, the budget and the tool
gate read this table instead of branching on `ResponseType`. Adding a kind: one row here (and
its `ResponseType` value in engine/kernel/model.py when it is new on the wire), plus its test
(tests/escalation/test_responses.py shows one).

Readers look rows up through the functions below at call time (never a copy made at import), so
a test may patch `KINDS` and see the whole path use its row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.kernel.model import Escalation, Origin, Response, ResponseType

APPROVE = "approve"  # the two options of a tool approval (engine/escalation/desk.py)
DENY = "deny"

# The fields of a Response that carry an answer's value, and their names on the wire.
WIRE_FIELDS = {"selected_option": "selectedOption", "text_response": "textResponse"}


@dataclass(frozen=True)
class ResponseKind:
    name: str  # the row's name; the CLI flag's dest
    response_type: ResponseType  # `responseType` on the wire
    label: str  # the pane's line for it (kinds that are not an option of the escalation)
    field: str | None  # the Response field it requires (a key of WIRE_FIELDS), or none
    flag: str  # `escalate answer --...`
    flag_help: str
    tell: Callable[[Escalation, Response], str]  # the line of the agent's decision message
    value: Callable[[Escalation, Response], str]  # the answer as one text (a flow's `escalate`)
    said: Callable[[Response], str]  # the CLI's words: `ESC: decided (...)`
    logged: str  # the log's words when the answer has no value of its own
    approved: bool  # the work goes on (audit), for an escalation that is not a tool approval
    validate: Callable[[Escalation, Response], str | None]  # the reason it cannot stand, or None
    metavar: str | None = None  # the flag takes a value (into `field`) when set
    fixed: str | None = None  # the option id it always chooses (approve, deny)
    tool_approval_only: bool = False  # it answers tool approvals and nothing else
    runs_tool: bool = False  # a tool approval answered so lets the tool run
    stops: bool = False  # it says "do not do this": a token budget's run stops
    pane_key: str | None = None  # its line in the pane (after the escalation's options)
    pane_rank: int = 0  # the order of those lines
    offered: Callable[[Escalation], bool] = lambda escalation: False  # the pane shows its line

    def make(self, value: str | None = None, instructions: str | None = None) -> Response:
        """The Response of this kind, with `value` in its field (a fixed option needs none)."""
        fields: dict[str, str | None] = {}
        if self.fixed is not None:
            fields["selected_option"] = self.fixed
        elif self.field is not None:
            fields[self.field] = value
        return Response(self.response_type, additional_instructions=instructions, **fields)  # type: ignore[arg-type]

    def approves(self, escalation: Escalation) -> bool:
        """Did the work go on? For a tool approval only a run of the tool counts."""
        return self.runs_tool if escalation.origin is Origin.TOOL_APPROVAL else self.approved

    @property
    def wire_field(self) -> str | None:
        return WIRE_FIELDS[self.field] if self.field is not None else None


# -- what each kind tells the agent, and how it is checked ------------------------------------


def _tell_option(escalation: Escalation, r: Response) -> str:
    option = escalation.option(r.selected_option or "")
    label = f" - {option.label}" if option else ""
    return f"Chosen option: {r.selected_option}{label}."


def _value_option(escalation: Escalation, r: Response) -> str:
    option = escalation.option(r.selected_option or "")
    return option.label if option else str(r.selected_option)


def _valid_option(escalation: Escalation, r: Response) -> str | None:
    if not r.selected_option:
        return "an option answer needs selectedOption"
    if escalation.option(r.selected_option) is None:
        offered = ", ".join(o.id for o in escalation.options) or "none"
        return f"option {r.selected_option!r} is not offered (options: {offered})"
    return None


def _valid_fixed(escalation: Escalation, r: Response) -> str | None:
    """approve / deny: the option of that id, or, among an ACP agent's own options (their ACP
    kind is their description), its first allow / reject option (engine/runtime/acp)."""
    prefix = "allow_" if r.selected_option == APPROVE else "reject_"
    if escalation.option(r.selected_option or "") is None and any(o.description.startswith(prefix) for o in escalation.options):
        return None
    return _valid_option(escalation, r)


def _valid_text(escalation: Escalation, r: Response) -> str | None:
    return "a text answer needs textResponse" if r.text_response is None else None


def _valid(escalation: Escalation, r: Response) -> str | None:
    return None


def _kind_name(escalation: Escalation, r: Response) -> str:
    return r.response_type.value


def _said_option(r: Response) -> str:
    return f"option {r.selected_option}"


def _not_tool_approval(escalation: Escalation) -> bool:
    return escalation.origin is not Origin.TOOL_APPROVAL


_OPTION = dict(response_type=ResponseType.OPTION, field="selected_option", tell=_tell_option, value=_value_option,
               said=_said_option, logged="option", validate=_valid_option)

KINDS: tuple[ResponseKind, ...] = (
    ResponseKind("option", label="option", flag="--option", metavar="ID", approved=True,
                 flag_help="choose this option (its id, as `runs` prints it)", **_OPTION),  # type: ignore[arg-type]
    ResponseKind("text", ResponseType.TEXT, "Custom response...", "text_response", "--text", "answer in words",
                 tell=lambda e, r: f"Answer: {r.text_response}", value=lambda e, r: r.text_response or "",
                 said=lambda r: "text", logged="text", approved=True, validate=_valid_text, metavar="T",
                 pane_key="custom", pane_rank=3, offered=_not_tool_approval),
    ResponseKind("skip", ResponseType.SKIP, "Skip this task", None, "--skip", "skip this task",
                 tell=lambda e, r: "Skip: do not do this; leave this part of the task undone and say so.",
                 value=_kind_name, said=lambda r: "skip", logged="skip", approved=False, validate=_valid,
                 stops=True, pane_key="skip", pane_rank=2, offered=_not_tool_approval),
    ResponseKind("agent_decide", ResponseType.AGENT_DECIDE, "Let agent decide", None, "--agent-decide",
                 "let the agent decide (when the escalation allows it)",
                 tell=lambda e, r: "Decide yourself: use your own judgement and continue.",
                 value=_kind_name, said=lambda r: "agent decide", logged="let agent decide", approved=True,
                 validate=_valid, pane_key="agent", pane_rank=1,
                 offered=lambda e: e.allow_agent_decision and _not_tool_approval(e)),
    # A tool approval is an option escalation with the options `approve` and `deny`.
    # An ACP agent's permission request offers its own options: approve / deny are its first allow
    # / reject option.
    ResponseKind("approve", label="approve", flag="--approve", flag_help="approve a tool call (an ACP agent's: its first allow option)",
                 approved=True, fixed=APPROVE, tool_approval_only=True, runs_tool=True,
                 **{**_OPTION, "validate": _valid_fixed}),  # type: ignore[arg-type]
    ResponseKind("deny", label="deny", flag="--deny", flag_help="deny a tool call (an ACP agent's: its first reject option)",
                 approved=False, fixed=DENY, tool_approval_only=True,
                 **{**_OPTION, "validate": _valid_fixed}),  # type: ignore[arg-type]
)


# -- looking rows up ---------------------------------------------------------------------------


def kinds() -> tuple[ResponseKind, ...]:
    return KINDS


def kind(name: str) -> ResponseKind:
    """The row called `name` (KeyError when there is none: a programming error)."""
    found = next((k for k in KINDS if k.name == name), None)
    if found is None:
        raise KeyError(f"no response kind {name!r}")
    return found


def wire_kinds() -> list[ResponseKind]:
    """The rows that stand for a `responseType` of their own (approve and deny are options)."""
    return [k for k in KINDS if k.fixed is None]


def kind_of(response: Response, origin: Origin) -> ResponseKind:
    """The row of an answer to an escalation of `origin`: approve or deny for a tool approval's
    two options, else the row of its `responseType`."""
    found = None
    for k in KINDS:
        if k.response_type is response.response_type:
            if k.fixed is None:
                found = found or k
            elif origin is Origin.TOOL_APPROVAL and k.fixed == response.selected_option:
                return k
    if found is None:
        raise KeyError(f"no response kind for responseType {response.response_type!r}")
    return found


def by_pane_key(key: str) -> ResponseKind:
    return next(k for k in KINDS if k.pane_key == key)


def pane_extras(escalation: Escalation) -> list[ResponseKind]:
    """The pane's lines after the escalation's own options, in their order."""
    return sorted((k for k in KINDS if k.pane_key is not None and k.offered(escalation)), key=lambda k: k.pane_rank)


def chosen_option(response: Response) -> str | None:
    """The option id an answer chooses; None for the kinds that choose none."""
    k = next((k for k in KINDS if k.fixed is None and k.response_type is response.response_type), None)
    return response.selected_option if k is not None and k.field == "selected_option" else None
