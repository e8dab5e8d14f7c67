"""History: every escalation of this session and of earlier ones (the store), with its outcome,
filters, and the metrics (human decisions, seed 002's agent-to-agent figures, runs)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Header, Input, Select, Static

from engine.escalation.model import EscalationRecord, ResolvedBy
from tui.format import decision_summary, one_line
from tui.metrics import HumanTally, ago, metrics_text
from tui.audit_view import export, figures_text, text_matches
from tui.session import ConsoleSession
from tui.widgets.key_bar import KeyBar

STATES = ("pending", "decided", "withdrawn")
SESSIONS = (("this session", "this"), ("earlier sessions", "earlier"))
MAX_ROWS = 200  # newest matching rows drawn; a store may hold tens of thousands
LOAD_POLL = 0.25  # seconds between checks while a big store loads


def record_matches(record: EscalationRecord, text: str, state: str, resolved_by: str, session: str = "") -> bool:
    """The history's filters: free text over task/agent/reason/question, state, who decided,
    and which session (`this` or `earlier`)."""
    esc = record.pending.escalation
    if session and record.earlier != (session == "earlier"):
        return False
    if state and record.state != state:
        return False
    if resolved_by and (record.decision is None or record.decision.resolved_by.value != resolved_by):
        return False
    if text:
        return text_matches(record, text)  # free text, and by:/rule:/via:/edited:/agent:/reason:/tool: words
    return True


class HistoryScreen(Screen):
    # `/` is handled on arrival and focuses at once: what is typed right after it is the filter.
    BINDINGS = [Binding("escape,h", "app.pop_screen", "Back"), Binding("slash", "focus_filter", "Filter", priority=True),
                Binding("x", "export", "Export")]

    def __init__(self, session: ConsoleSession) -> None:
        super().__init__()
        self.session = session
        self._tally, self._tally_of = HumanTally(), None  # the earlier sessions' tally, and of which list
        self.matching: list[EscalationRecord] = []  # what the filters match, for the export

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="history-filters"):
            yield Input(placeholder="filter: task, agent, reason or question ( / )", id="history-filter-text")
            yield Select([(s, s) for s in STATES], prompt="any state", id="history-filter-state")
            yield Select([(r.value, r.value) for r in ResolvedBy], prompt="decided by anyone", id="history-filter-by")
            yield Select(SESSIONS, prompt="any session", id="history-filter-session")
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="history-metrics", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#history-table", DataTable)
        # The outcome before the question: on an 80-120 column terminal it stays in view.
        for name in ("asked", "session", "task", "agent", "reason", "outcome", "question"):
            table.add_column(name, key=name)
        table.border_title = "Escalations"
        self.query_one("#history-metrics", Static).border_title = "Metrics"
        if not self.session.store_loaded.is_set():  # the database's history is still being read
            self._poll = self.set_interval(LOAD_POLL, self._check_loaded)
        self.refresh_history()
        table.focus()

    def _check_loaded(self) -> None:
        if self.session.store_loaded.is_set():
            self._poll.stop()
            self.refresh_history()

    def action_focus_filter(self) -> None:
        if isinstance(self.focused, Input):
            raise SkipAction()  # typing: `/` is a character
        self.set_focus(self.query_one("#history-filter-text", Input))

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
        filters = (self._filter_value("#history-filter-state"), self._filter_value("#history-filter-by"),
                   self._filter_value("#history-filter-session"))
        now = self.session.clock.now()
        table = self.query_one("#history-table", DataTable)
        table.clear()
        # One snapshot: the runs' thread adds records while we draw.
        earlier = self.session.earlier  # the loader may replace it meanwhile: read once
        everything = earlier + list(self.session.records.values())
        records = self.matching = [r for r in everything if record_matches(r, text, *filters)]
        for number, record in enumerate(reversed(records[-MAX_ROWS:])):  # newest first
            esc = record.pending.escalation
            if record.decision is not None:
                outcome = Text(decision_summary(record.decision, esc), style="green")
            else:
                outcome = Text(record.state, style="yellow" if record.state == "pending" else "dim")
            session = Text("earlier", style="dim italic") if record.earlier else Text("this")
            table.add_row(
                Text(ago(now - esc.created_at)), session, Text(one_line(esc.task_id, 30)), Text(one_line(esc.agent, 30)),
                Text(esc.reason.value), outcome, Text(one_line(esc.question, 60)),
                key=f"earlier-{number}:{esc.id}" if record.earlier else esc.id,  # ids repeat across sessions
            )
        table.border_subtitle = Text(self._subtitle(len(records), len(everything)))  # not markup: it may quote the store's path
        tally = self._earlier_tally(earlier) + HumanTally.of(everything[len(earlier):])
        self.query_one("#history-metrics", Static).update(figures_text(records) + metrics_text(
            self.session.agent_history, tally, now, self.session.runs, self.session.earlier_runs,
        ))

    def action_export(self) -> None:
        """`x`: what the filters match, as JSON lines in a new file of the current folder."""
        if isinstance(self.focused, Input):
            raise SkipAction()  # typing: `x` is a character
        try:
            path, count = export(self.matching)
        except OSError as exc:
            self.app.notify(f"cannot write the export: {exc.strerror or exc}", title="Not exported", severity="error", markup=False)
            return
        self.app.notify(f"{count} decisions written to {path}", title="History exported", markup=False)

    def _earlier_tally(self, earlier: list[EscalationRecord]) -> HumanTally:
        """Earlier sessions never change: tallied once (again only when the store's list is replaced)."""
        if self._tally_of is not earlier:
            self._tally, self._tally_of = HumanTally.of(earlier), earlier
        return self._tally

    def _subtitle(self, matching: int, total: int) -> str:
        shown = f"newest {MAX_ROWS} of {matching} matching" if matching > MAX_ROWS else f"{matching} of {total}"
        if self.session.store_error:
            return f"{shown} · store unreadable: {one_line(self.session.store_error, 200)}"
        if not self.session.store_loaded.is_set():
            return f"{shown} · loading earlier sessions…"
        return shown
