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
from textual.widgets import Input, Select, Static

from engine.kernel.model import EscalationRecord, ResolvedBy
from tui.format import decision_summary, one_line
from tui.metrics import HumanTally, ago, metrics_text
from tui.audit_view import export, figures_text, text_matches
from tui.session import ConsoleSession
from tui.widgets.header import ConsoleHeader
from tui.widgets.key_bar import KeyBar
from tui.widgets.row_table import Column, RowTable

STATES = ("pending", "decided", "withdrawn")
SESSIONS = (("this session", "this"), ("earlier ones", "earlier"))
MAX_ROWS = 200  # newest matching rows drawn; a store may hold tens of thousands
LOAD_POLL = 0.25  # seconds between checks while a big store loads


# Fixed widths (tui/widgets/row_table.py); on a narrow terminal the session goes first, then
# the question (Enter shows it whole), then the agent, then the reason.
COLUMNS = (
    Column("asked", 8, "asked"),
    Column("session", 7, "session", drop=1),
    Column("task", 16, "task"),
    Column("agent", 12, "agent", drop=3),
    Column("reason", 17, "reason", drop=4),
    Column("outcome", 30, "outcome"),
    Column("question", 12, "question", flex=True, drop=2),
)
FILTER_PLACEHOLDER = "/ filter: any text"  # short enough to show whole on 80 columns
AGES_TICK = 1.0  # seconds: the `asked` ages move
BY_LABELS = {"human": "a human", "answers_file": "answers file", "rule": "a rule", "timeout_default": "timeout"}


def record_matches(record: EscalationRecord, text: str, state: str, resolved_by: str, session: str = "") -> bool:
    """The history's filters: free text found in any of the escalation's texts (task, agent,
    reason, question, context, outcome; each on its own: a match never spans two), state, who
    decided, and which session (`this` or `earlier`)."""
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
        self._rows: dict[str, EscalationRecord] = {}  # row key -> record shown

    def compose(self) -> ComposeResult:
        yield ConsoleHeader()  # the status of the waiting decisions shows here too
        with Horizontal(id="history-filters"):
            # Compact: one line, and the four fit on an 80-column terminal without wrapping.
            yield Input(placeholder=FILTER_PLACEHOLDER, id="history-filter-text", compact=True)
            yield Select([(s, s) for s in STATES], prompt="any state", id="history-filter-state", compact=True)
            yield Select([(BY_LABELS.get(r.value, r.value), r.value) for r in ResolvedBy], prompt="by anyone",
                         id="history-filter-by", compact=True)
            yield Select(SESSIONS, prompt="any session", id="history-filter-session", compact=True)
        yield RowTable(COLUMNS, show_header=True, zebra_stripes=True, id="history-table")
        yield Static("", id="history-metrics", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#history-table", RowTable)
        table.border_title = "Escalations · Enter: all of it"
        self.set_interval(AGES_TICK, self._refresh_ages)
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
        table = self.query_one("#history-table", RowTable)
        selected = table.cursor_key
        table.clear()
        self._rows = {}
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
            key = f"earlier-{number}:{esc.id}" if record.earlier else esc.id  # ids repeat across sessions
            table.add_row(key, (
                Text(ago(now - esc.created_at)), session, Text(one_line(esc.task_id, 30)), Text(one_line(esc.agent, 30)),
                Text(esc.reason.value), outcome, Text(one_line(esc.question, 200)),
            ))
            self._rows[key] = record
        if selected in self._rows:  # the cursor stays on its record while the list changes
            table.move_cursor(row=table.get_row_index(selected))
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
    def _refresh_ages(self) -> None:
        """The `asked` column moves with the clock (a cell whose text is unchanged is not drawn)."""
        now = self.session.clock.now()
        table = self.query_one("#history-table", RowTable)
        for key, record in self._rows.items():
            table.update_cell(key, "asked", Text(ago(now - record.pending.escalation.created_at)))

    @on(RowTable.Selected, "#history-table")
    def _row_chosen(self, event: RowTable.Selected) -> None:
        """Enter (or a click) on a row: that escalation in full (question, context, outcome:
        nothing cut)."""
        event.stop()
        record = self._rows.get(event.key)
        if record is not None:
            from tui.screens.record_detail import RecordDetail

            self.app.push_screen(RecordDetail(record, self.session.clock.now()))

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
