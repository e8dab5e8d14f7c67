"""Plain-text formatting shared by the console's widgets (no Textual here, easy to test).

Everything an agent wrote reaches the screen through these functions as `rich.text.Text`, never
as a markup string: `[prod vs staging]` must show as written. Every string from outside the
program (agent text, file, task, agent and flow names) goes through `visible`
(engine/text_safety.py), here or in the widget that shows it: control characters shown as signs.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from engine.escalation.broker import NoTimeoutDefault, timeout_decision
from engine.kernel.model import Decision, Escalation, PendingEscalation
from engine.kernel.responses import wire_kinds
from engine.text_safety import visible

# Run status -> (label shown, style). "waiting" is the one the user acts on.
STATUS_STYLES: dict[str, tuple[str, str]] = {
    "pending": ("starting", "dim"),
    "running": ("running", "cyan"),
    "waiting": ("waiting for you", "bold yellow"),
    "done": ("done", "green"),
    "failed": ("failed", "bold red"),
    "stopped": ("stopped", "magenta"),
    "aborted": ("aborted", "magenta"),
    "cancelled": ("cancelled", "dim"),
}


def terminal_title(title: str) -> str:
    """The escape sequence (OSC 2) that sets the terminal's own title to `title`: a control
    character in it would end the sequence early and start another."""
    return f"\x1b]2;{visible(title)}\x07"


_CENTURY = 100 * 365 * 24 * 3600


def duration(seconds: float) -> str:
    """`42s`, `3:07`, `1:02:03`, `2d 1:02:03`: short enough for a table column.

    An agent may ask for any finite timeout (1e300 s): past a century it reads as such.
    """
    seconds = max(0.0, seconds)  # NaN and -inf become 0 here
    if seconds >= _CENTURY:
        return "more than 100 years"
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}:{minutes:02d}:{secs:02d}"


def token_count(tokens: int) -> str:
    """A run's tokens in at most 6 cells: 950, 12.3k, 4.1M; nothing before the first."""
    if tokens <= 0:
        return ""
    if tokens < 1000:
        return str(tokens)
    if tokens < 999_950:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M" if tokens < 999_950_000 else f"{tokens // 1_000_000_000}G"


def status_text(status: str) -> Text:
    label, style = STATUS_STYLES.get(status, (status, ""))
    return Text(label, style=style)


def short_paths(text: str) -> str:
    """`text` (a rule's FILE:LINE, say) with the current folder's paths made relative, one line,
    control characters shown as signs."""
    import os

    return one_line(text.replace(os.getcwd() + os.sep, ""), 10_000)


def one_line(value: Any, limit: int = 80) -> str:
    """A value squeezed onto one line for lists and logs."""
    if isinstance(value, str):
        text = value
    else:
        import json  # only for structured values: not on the first frame's path

        text = json.dumps(value, default=str, ensure_ascii=False)
    text = visible(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def countdown(pending: PendingEscalation, now: float) -> str:
    """The pane's timeout line: what happens by itself, and when (the broker's own default)."""
    waits = "No timeout: waits for your answer"
    if pending.policy.deadline is None:
        return waits
    try:
        # The broker's note reads "nobody answered within N s: <what happens>".
        outcome = timeout_decision(pending, now).note.split(": ", 1)[-1]
    except NoTimeoutDefault:  # a deadline on a `wait` default: the broker keeps waiting
        return waits
    return f"No answer in {duration(max(0.0, pending.policy.deadline - now))} → {one_line(outcome, 120)}"  # it may name an option id


def has_default(pending: PendingEscalation) -> bool:
    """Something happens by itself at the deadline (not a `wait`)."""
    try:
        timeout_decision(pending, pending.policy.deadline or 0.0)
    except NoTimeoutDefault:
        return False
    return pending.policy.deadline is not None


def decision_summary(decision: Decision, escalation: Escalation | None = None) -> str:
    """`opt1 "Yes, use JWT" by human (+ instructions)`: a decision in one line of words."""
    fields = decision.to_event_fields(escalation)
    return f"{decision_words(fields)}{_edited(fields)} by {decision.resolved_by.value}{_instructions(fields)}{_stops(fields)}"


def decision_words(fields: dict[str, Any]) -> str:
    """What was decided, from a `decision` event's fields: `opt1 "label"`, `text "..."`, ..."""
    if fields.get("selectedOption"):
        label = f' "{one_line(fields["selectedLabel"], 60)}"' if fields.get("selectedLabel") else ""
        return one_line(fields["selectedOption"], 30) + label
    if fields.get("textResponse"):
        return f'text "{one_line(fields["textResponse"], 60)}"'
    kind = fields.get("responseType") or ""
    return next((k.logged for k in wire_kinds() if k.response_type.value == kind), kind)


def _edited(fields: dict[str, Any]) -> str:
    return " with edited arguments" if isinstance(fields.get("editedArgs"), dict) else ""


def tool_call_words(fields: dict[str, Any]) -> str:
    """A `tool_call` event: the call that ran (the edited one, when the person edited it before
    approving, then the one the agent asked for), and the verdict."""
    agent, tool, verdict = _name(fields.get("agent")), _name(fields.get("tool")), _name(fields.get("verdict"))
    edited = fields.get("editedArgs")
    if isinstance(edited, dict):
        return (f"{agent} {tool}({one_line(edited, 60)}) {verdict}, arguments edited "
                f"(asked: {tool}({one_line(fields.get('args', {}), 60)}))")
    return f"{agent} {tool}({one_line(fields.get('args', {}), 60)}) {verdict}"


def _instructions(fields: dict[str, Any]) -> str:
    return f' + "{one_line(fields["additionalInstructions"], 40)}"' if fields.get("additionalInstructions") else ""


def _stops(fields: dict[str, Any]) -> str:
    return " (task stops)" if fields.get("stopsTask") else ""


# Agent replies and results in the log: it wraps them, so they can be read whole (to a limit).
RESULT_LIMIT = 2000
NAME_LIMIT = 60  # an agent's or tool's name in a log line


# RunEvent type -> how its fields read in the event log.
def event_line(event_type: str, fields: dict[str, Any]) -> Text:
    """One event of a run as one styled line of plain text."""
    f = fields
    if event_type == "agent_call":
        return _line("→", f"{_name(f.get('agent'))}: {one_line(f.get('input', ''), 100)}", "cyan")
    if event_type == "agent_result":
        return _line("←", f"{_name(f.get('agent'))}: {one_line(f.get('result', ''), RESULT_LIMIT)}", "green")
    if event_type == "escalation":
        return _line(
            "↑",
            f"{_name(f.get('agent_name'))} escalated ({_name(f.get('condition_op'))} {_name(repr(f.get('condition_value')))}): "
            f"{one_line(f.get('result', ''), 60)}",
            "magenta",
        )
    if event_type == "human_escalation":
        return _line("?", f"{_name(f.get('agent'))} asks [{_name(f.get('reason'))}]: {one_line(f.get('question', ''), 90)}", "bold yellow")
    if event_type == "decision":
        return _line("✓", f"decided {decision_words(f)}{_edited(f)}{_instructions(f)} by {_name(f.get('resolvedBy'))}{_stops(f)}",
                     "bold green")
    if event_type == "tool_call":
        return _line("⚙", tool_call_words(f), "blue")
    if event_type == "agent_escalation":
        if f.get("approved"):  # its reason only repeats the path
            return _line("⇢", f"{_name(f.get('source'))} → {_name(f.get('target'))} approved", "magenta")
        return _line("⇢", f"{_name(f.get('source'))} → {_name(f.get('target'))} denied: {one_line(f.get('reason', ''), 70)}", "magenta")
    if event_type == "flow_result":
        return _line("■", f"result: {one_line(f.get('result', ''), RESULT_LIMIT)}", "bold green")
    if event_type == "attention":  # an outside agent's session waits on its person (engine/outside/core.py)
        return _line("!", f"{_name(f.get('agent'))} needs attention: {one_line(f.get('message') or f.get('title', ''), 100)}",
                     "bold yellow")
    if event_type == "log":
        if isinstance(f.get("output"), dict):  # a command's output (run_command): read whole, to a limit
            return _line("⚙", f"{one_line(f.get('message', ''), 110)}: {command_output(f['output'])}", "blue")
        return _line("·", one_line(f.get("message", ""), 110), "")
    return _line("·", f"{event_type} {one_line(f, 100)}", "dim")


def command_output(result: dict[str, Any]) -> str:
    """A command's result (`stdout`, `stderr`, or `error`) as the log shows it."""
    parts = [f"{key}: {one_line(result[key], RESULT_LIMIT)}" for key in ("stdout", "stderr", "error")
             if isinstance(result.get(key), str) and result[key].strip()]
    return " · ".join(parts) or "no output"


def _name(value: Any) -> str:
    """An agent, tool or target name from an event: agent text too (a hand-off's target)."""
    return one_line(str(value), NAME_LIMIT)


def _line(mark: str, body: str, style: str) -> Text:
    line = Text(f"{mark} ", style=style or "dim")
    line.append(body)  # appended as plain text: never parsed as markup
    return line
