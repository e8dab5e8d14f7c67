"""History: every escalation of this session with its outcome, filters, and seed 002's metrics."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Select, Static

from engine.escalation.model import ResolvedBy
from tui.format import decision_summary, duration, one_line
from tui.metrics import metrics_text
from tui.session import ConsoleSession, EscalationRecord

STATES = ("pending", "decided", "withdrawn")


def record_matches(record: EscalationRecord, text: str, state: str, resolved_by: str) -> bool:
    """The history's filters: free text over task/agent/reason/question, state, who decided."""
    esc = record.pending.escalation
    if state and record.state != state:
        return False
    if resolved_by and (record.decision is None or record.decision.resolved_by.value != resolved_by):
        return False
    if text:
        haystack = " ".join((esc.task_id, esc.agent, esc.reason.value, esc.question, esc.context)).lower()
        return text.lower() in haystack
    return True


class HistoryScreen(Screen):
    BINDINGS = [Binding("escape,h", "app.pop_screen", "Back"), Binding("slash", "focus_filter", "Filter")]

    def __init__(self, session: ConsoleSession) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="history-filters"):
            yield Input(placeholder="filter: task, agent, reason or question ( / )", id="history-filter-text")
            yield Select([(s, s) for s in STATES], prompt="any state", id="history-filter-state")
            yield Select([(r.value, r.value) for r in ResolvedBy], prompt="decided by anyone", id="history-filter-by")
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="history-metrics", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#history-table", DataTable)
        for name in ("asked", "task", "agent", "reason", "question", "outcome"):
            table.add_column(name, key=name)
        table.border_title = "Escalations"
        self.query_one("#history-metrics", Static).border_title = "Metrics"
        self.refresh_history()
        table.focus()

    def action_focus_filter(self) -> None:
        self.query_one("#history-filter-text", Input).focus()

    @on(Input.Changed, "#history-filter-text")
    @on(Select.Changed)
    def _filters_changed(self) -> None:
        self.refresh_history()

    def _filter_value(self, selector: str) -> str:
        value = self.query_one(selector, Select).value
        return "" if value is Select.NULL else str(value)

    def refresh_history(self) -> None:
        """Redraw from the session's records (called on every broker change too)."""
        text = self.query_one("#history-filter-text", Input).value.strip()
        state = self._filter_value("#history-filter-state")
        by = self._filter_value("#history-filter-by")
        now = self.session.clock.now()
        table = self.query_one("#history-table", DataTable)
        table.clear()
        records = [r for r in self.session.records.values() if record_matches(r, text, state, by)]
        for record in reversed(records):  # newest first
            esc = record.pending.escalation
            if record.decision is not None:
                outcome = Text(decision_summary(record.decision, esc), style="green")
            else:
                outcome = Text(record.state, style="yellow" if record.state == "pending" else "dim")
            table.add_row(
                Text(f"{duration(now - esc.created_at)} ago"), Text(esc.task_id), Text(esc.agent),
                Text(esc.reason.value), Text(one_line(esc.question, 40)), outcome, key=esc.id,
            )
        table.border_subtitle = f"{len(records)} of {len(self.session.records)}"
        self.query_one("#history-metrics", Static).update(
            metrics_text(self.session.agent_policy, list(self.session.records.values()), now)
        )
