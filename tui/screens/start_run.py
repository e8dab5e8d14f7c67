"""Start a run: choose the flow, type the input, Enter."""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets.input import Selection
from textual.widgets import Input, Label, Select, Static

from tui.format import one_line
from tui.session import RunRequest, WorkflowEntry

DEFAULT_ENTRY = "(default entry)"


class StartRunScreen(ModalScreen[RunRequest | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    AUTO_FOCUS = "#start-input"  # what the user types right after `s` is the input

    def __init__(self, entry: WorkflowEntry) -> None:
        super().__init__()
        self.entry = entry
        self._answered = False  # a second Enter (or Escape) before the dialog has gone does nothing
        self._early: list[events.Key] = []  # keys of a burst that arrived before the input had focus

    def compose(self) -> ComposeResult:
        with Vertical(id="start-dialog") as dialog:
            dialog.border_title = Text(f"Start {one_line(self.entry.name, 80)}")  # not markup: a file's name
            about = self.entry.about
            if about is not None and about.description:  # the file's own words: not markup
                yield Static(Text(one_line(about.description, 200), style="italic"), id="start-about")
            yield Label("Flow")
            options = [(DEFAULT_ENTRY, "")] + [(Text(one_line(f, 80)), f) for f in self.entry.flows]
            yield Select(options, value="", allow_blank=False, id="start-flow")
            yield Label("Input (Enter starts, Escape cancels)")
            # The workflow's sample input, selected: Enter starts with it, typing replaces it.
            sample = one_line(about.sample_input, 2000) if about is not None else ""
            yield Input(sample, placeholder="what the run starts with", id="start-input", select_on_focus=False)

    def on_key(self, event: events.Key) -> None:
        # `s` then typing in one burst: the keys after `s` reach this screen before its input
        # exists or has focus. They are kept and typed into it once it has.
        if self.focused is None:
            event.stop()
            event.prevent_default()
            self._early.append(event)

    def on_mount(self) -> None:
        field = self.query_one("#start-input", Input)
        field.selection = Selection(0, len(field.value))
        self.call_after_refresh(self._type_early_keys)

    def _type_early_keys(self) -> None:
        field = self.query_one("#start-input", Input)
        field.focus()
        early, self._early = self._early, []
        for key in early:
            if key.key == "enter":
                self._answer(RunRequest(flow=str(self.query_one("#start-flow", Select).value) or None, input=field.value))
                return
            if key.key == "backspace":
                field.action_delete_left()
            elif key.is_printable and key.character:
                field.replace(key.character, *sorted(field.selection))  # the selected sample, else nothing

    @on(Input.Submitted, "#start-input")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        flow = self.query_one("#start-flow", Select).value
        self._answer(RunRequest(flow=str(flow) or None, input=event.value))

    def action_cancel(self) -> None:
        self._answer(None)

    def _answer(self, request: RunRequest | None) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(request)
