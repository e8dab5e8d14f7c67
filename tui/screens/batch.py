"""Batch: the pending decisions like the one on screen (engine/escalation/batch.py: the same task,
the same tool with the same shape of arguments, or the same reason), all selected, each row
showing its run, its age and the whole request; space unselects one, `a` approves the selected,
`n` denies them, Escape cancels. So `b` `a` approves them all: two keys. Each is recorded as its
own decision, with its row's text as what was shown. A request too long to show whole is left
out of the batch (the note says how many): it is answered on its own, in the pane."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from engine.escalation.batch import MAX_REQUEST_TEXT, batch_response, kind_of, request_text, shown_whole
from engine.kernel.model import Origin, PendingEscalation
from engine.kernel.responses import chosen_option
from engine.text_safety import visible
from tui.format import duration, one_line


@dataclass(frozen=True)
class BatchRow:
    """One request of the batch: its id, its whole request text, and the row as shown."""

    id: str
    request: str
    shown: str


@dataclass(frozen=True)
class BatchChoice:
    approve: bool
    rows: tuple[BatchRow, ...]


def batch_row(pending: PendingEscalation, now: float) -> BatchRow:
    """The row of `pending`: who and when on one line, the whole request below it, and for a
    question, the answer approving gives it."""
    esc = pending.escalation
    request = request_text(pending)
    head = (f"run {esc.run_id} · {duration(now - esc.created_at)} ago · task {esc.task_id}"
            + (f" · {esc.agent}" if esc.agent else ""))
    lines = [head, request]
    if esc.origin is not Origin.TOOL_APPROVAL:
        lines.append(_approving(pending))
    return BatchRow(esc.id, request, visible("\n".join(lines)))


def _approving(pending: PendingEscalation) -> str:
    response = batch_response(pending, True)
    if response is None:
        return "approve: left waiting (no recommended option)"
    recommended = pending.escalation.recommended
    if chosen_option(response) is not None and recommended is not None:
        return f"approve: {recommended.label} (recommended)"
    return "approve: the agent decides"


class BatchList(OptionList):
    """The batch's rows, each whole (wrapped over as many lines as it needs: Textual's
    SelectionList draws one line per row and cuts the rest), `[x]` when selected; space (or
    Enter, or a click) selects or unselects the highlighted one."""

    BINDINGS = [Binding("space", "toggle", "Select or not", show=False)]

    class Changed(Message):
        """The selection changed."""

    def __init__(self, rows: list[BatchRow], *, id: str) -> None:  # noqa: A002 (Textual's name)
        self.rows = {row.id: row for row in rows}
        self.selected = set(self.rows)
        options: list[Option | None] = []
        for row in rows:
            options += [None] if options else []  # a line between rows
            options.append(Option(self._prompt(row), id=row.id))
        super().__init__(*options, id=id)

    def _prompt(self, row: BatchRow) -> Text:
        return Text("[x] " if row.id in self.selected else "[ ] ") + Text(row.shown)

    def action_toggle(self) -> None:
        if self.highlighted is None:
            return
        row = self.rows[str(self.get_option_at_index(self.highlighted).id)]
        self.selected ^= {row.id}
        self.replace_option_prompt(row.id, self._prompt(row))
        self.post_message(self.Changed())

    @on(OptionList.OptionSelected)
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_toggle()


class BatchScreen(ModalScreen[BatchChoice | None]):
    DEFAULT_CSS = """
    BatchScreen { align: center middle; }
    #batch-dialog { width: 110; max-width: 100%; height: auto; max-height: 100%; border: thick $accent;
                    background: $surface; padding: 0 1; }
    #batch-dialog Static { width: 100%; height: auto; }
    #batch-list { height: auto; max-height: 24; }
    #batch-keys { color: $text-muted; }
    """
    BINDINGS = [
        Binding("a", "decide(True)", "Approve selected", priority=True),
        Binding("n", "decide(False)", "Deny selected", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]
    AUTO_FOCUS = "#batch-list"

    def __init__(self, pending: list[PendingEscalation], now: float) -> None:
        super().__init__()
        whole = [p for p in pending if shown_whole(p)]
        self.pending = whole
        self.left_out = len(pending) - len(whole)
        self.rows = {p.escalation.id: batch_row(p, now) for p in whole}
        self.kind = kind_of(pending[0]) if pending else "-"
        self._answered = False

    def compose(self) -> ComposeResult:
        with Vertical(id="batch-dialog") as dialog:
            dialog.border_title = Text(f"Batch: {len(self.pending)} waiting, {one_line(self.kind, 60)}")
            yield BatchList(list(self.rows.values()), id="batch-list")
            yield Static("", id="batch-note", markup=False)
            yield Static("a: approve selected   n: deny selected   space: select or not   Escape: cancel",
                         id="batch-keys", markup=False)

    def on_mount(self) -> None:
        self._note()

    @on(BatchList.Changed)
    def _note(self) -> None:
        chosen = self._chosen()
        cannot = sum(1 for p in chosen if batch_response(p, True) is None)
        note = f"{len(chosen)} of {len(self.pending)} selected"
        if cannot:
            note += f"; {cannot} without a recommended option are left waiting on approve"
        if self.left_out:
            note += (f"; {self.left_out} alike not in this batch: longer than {MAX_REQUEST_TEXT} characters, "
                     "answer each in the pane")
        self.query_one("#batch-note", Static).update(note)

    def _chosen(self) -> list[PendingEscalation]:
        selected = self.query_one("#batch-list", BatchList).selected
        return [p for p in self.pending if p.escalation.id in selected]

    def action_decide(self, approve: bool) -> None:
        chosen = self._chosen()
        if chosen and not self._answered:
            self._answered = True
            self.dismiss(BatchChoice(approve, tuple(self.rows[p.escalation.id] for p in chosen)))

    def action_cancel(self) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(None)
