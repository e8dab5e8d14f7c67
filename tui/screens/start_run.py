"""Start a run: choose the flow, type the input, Enter."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Select

from tui.session import RunRequest, WorkflowEntry

DEFAULT_ENTRY = "(default entry)"


class StartRunScreen(ModalScreen[RunRequest | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, entry: WorkflowEntry) -> None:
        super().__init__()
        self.entry = entry

    def compose(self) -> ComposeResult:
        with Vertical(id="start-dialog") as dialog:
            dialog.border_title = f"Start {self.entry.name}"
            yield Label("Flow")
            options = [(DEFAULT_ENTRY, "")] + [(f, f) for f in self.entry.flows]
            yield Select(options, value="", allow_blank=False, id="start-flow")
            yield Label("Input (Enter starts, Escape cancels)")
            yield Input(placeholder="what the run starts with", id="start-input")

    def on_mount(self) -> None:
        self.query_one("#start-input", Input).focus()

    @on(Input.Submitted, "#start-input")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        flow = self.query_one("#start-flow", Select).value
        self.dismiss(RunRequest(flow=str(flow) or None, input=event.value))

    def action_cancel(self) -> None:
        self.dismiss(None)
