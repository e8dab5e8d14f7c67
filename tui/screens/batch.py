"""Batch: the pending decisions like the one on screen (same tool, or same reason), all
selected; space unselects one, `a` approves the selected, `n` denies them, Escape cancels. So
`b` `a` approves them all: two keys. Each is recorded as its own decision."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import SelectionList, Static
from textual.widgets.selection_list import Selection

from engine.escalation.batch import batch_response, kind_of
from engine.escalation.model import PendingEscalation
from tui.format import one_line


@dataclass(frozen=True)
class BatchChoice:
    approve: bool
    ids: tuple[str, ...]


def preview_line(pending: PendingEscalation) -> str:
    esc = pending.escalation
    what = esc.context if esc.origin.value == "tool_approval" else esc.question
    return f"{one_line(esc.task_id, 24)} · {one_line(esc.agent, 20)} · {one_line(what, 160)}"


class BatchScreen(ModalScreen[BatchChoice | None]):
    DEFAULT_CSS = """
    BatchScreen { align: center middle; }
    #batch-dialog { width: 110; max-width: 100%; height: auto; max-height: 100%; border: thick $accent;
                    background: $surface; padding: 0 1; }
    #batch-dialog Static { width: 100%; height: auto; }
    #batch-list { height: auto; max-height: 20; }
    #batch-keys { color: $text-muted; }
    """
    BINDINGS = [
        Binding("a", "decide(True)", "Approve selected", priority=True),
        Binding("n", "decide(False)", "Deny selected", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]
    AUTO_FOCUS = "#batch-list"

    def __init__(self, pending: list[PendingEscalation]) -> None:
        super().__init__()
        self.pending = pending
        self._answered = False

    def compose(self) -> ComposeResult:
        kind = kind_of(self.pending[0]) if self.pending else "-"
        with Vertical(id="batch-dialog") as dialog:
            dialog.border_title = Text(f"Batch: {len(self.pending)} waiting, {one_line(kind, 60)}")
            yield SelectionList[str](
                *[Selection(Text(preview_line(p)), p.escalation.id, True) for p in self.pending], id="batch-list")
            yield Static("", id="batch-note", markup=False)
            yield Static("a: approve selected   n: deny selected   space: select or not   Escape: cancel",
                         id="batch-keys", markup=False)

    def on_mount(self) -> None:
        self._note()

    @on(SelectionList.SelectedChanged)
    def _note(self) -> None:
        chosen = self._chosen()
        cannot = sum(1 for p in chosen if batch_response(p, True) is None)
        note = f"{len(chosen)} of {len(self.pending)} selected"
        if cannot:
            note += f"; {cannot} without a recommended option are left waiting on approve"
        self.query_one("#batch-note", Static).update(note)

    def _chosen(self) -> list[PendingEscalation]:
        selected = set(self.query_one("#batch-list", SelectionList).selected)
        return [p for p in self.pending if p.escalation.id in selected]

    def action_decide(self, approve: bool) -> None:
        chosen = self._chosen()
        if chosen and not self._answered:
            self._answered = True
            self.dismiss(BatchChoice(approve, tuple(p.escalation.id for p in chosen)))

    def action_cancel(self) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(None)
