"""One escalation of the history in full: what the table cuts (question, context, options,
outcome, instructions) as plain text, never markup."""

from __future__ import annotations

from datetime import datetime, timezone

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from engine.kernel.model import ASKED_BY, EscalationRecord
from engine.text_safety import visible
from tui.format import decision_summary, duration, one_line, short_paths
from tui.metrics import ago


def record_text(record: EscalationRecord, now: float) -> Text:
    esc = record.pending.escalation
    text = Text()

    def field(name: str, value: str, style: str = "") -> None:
        text.append(f"{name}: ", style="bold")
        text.append(visible(value), style=style)  # agent text and names: signs for control characters
        text.append("\n")

    field("Task", esc.task_id)
    field("Run", esc.run_id)
    field("Agent", esc.agent)
    field("Reason", esc.reason.value)
    asked = datetime.fromtimestamp(esc.created_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    field("Asked", f"{asked} ({ago(now - esc.created_at)})")
    asked_by = record.pending.extra.get(ASKED_BY)
    if asked_by:
        field("Asked by", short_paths(str(asked_by)))
    field("Question", esc.question)
    if esc.context:
        field("Context", esc.context, "italic")
    for option in esc.options:
        recommended = " (recommended)" if option.recommended else ""
        described = f": {option.description}" if option.description else ""
        field(f"  option {option.id}", f"{option.label}{recommended}{described}")
    decision = record.decision
    if decision is None:
        field("Outcome", record.state, "yellow")
        return text
    field("Outcome", decision_summary(decision, esc), "green")
    field("Decided by", decision.resolved_by.value + (f" ({decision.note})" if decision.note else ""))
    field("After", duration(max(0.0, decision.resolved_at - esc.created_at)))
    edited = decision.response.edited_args
    if edited is not None:  # what ran is not what the agent asked for (the context above)
        tool = record.pending.extra.get("tool")
        field("Ran, edited", f"{tool if isinstance(tool, str) else 'the tool'}({one_line(edited, 2000)})")
    if decision.response.text_response:
        field("Answer", decision.response.text_response)
    if decision.response.additional_instructions:
        field("Instructions", decision.response.additional_instructions)
    return text


class RecordDetail(ModalScreen[None]):
    DEFAULT_CSS = """
    RecordDetail { align: center middle; }
    RecordDetail > VerticalScroll { width: 90; max-width: 100%; height: auto; max-height: 90%;
                                    border: thick $accent; background: $surface; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,enter,q", "close", "Close")]

    def __init__(self, record: EscalationRecord, now: float) -> None:
        super().__init__()
        self.record = record
        self.now = now

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_title = "Escalation"
            yield Static(record_text(self.record, self.now), markup=False, id="record-text")

    def action_close(self) -> None:
        self.dismiss(None)
