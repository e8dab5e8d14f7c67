"""Start a run: choose the flow (or an ACP agent: its command and workspace), type the input, Enter."""

from __future__ import annotations

from pathlib import Path

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
AGENT = "\x00acp"  # the Select's value for "an ACP agent" (no flow's name has a NUL)
AGENT_CHOICE = "An ACP agent: a command (below)"


class StartRunScreen(ModalScreen[RunRequest | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, entry: WorkflowEntry | None, workspace: Path) -> None:
        """`entry` None: no workflow, an ACP agent only."""
        super().__init__()
        self.entry = entry
        self.workspace = workspace  # the agent's default workspace: the console's
        self.AUTO_FOCUS = "#start-agent" if entry is None else "#start-input"  # what the user types right after `s`
        self._answered = False  # a second Enter (or Escape) before the dialog has gone does nothing
        self._early: list[events.Key] = []  # keys of a burst that arrived before the input had focus

    def compose(self) -> ComposeResult:
        entry = self.entry
        with Vertical(id="start-dialog") as dialog:
            dialog.border_title = self._title(agent=entry is None)
            about = entry.about if entry is not None else None
            if about is not None and about.description:  # the file's own words: not markup
                yield Static(Text(one_line(about.description, 200), style="italic"), id="start-about")
            if entry is not None:
                yield Label("Flow (or an ACP agent)")
                options = [(DEFAULT_ENTRY, "")] + [(Text(one_line(f, 80)), f) for f in entry.flows]
                yield Select(options + [(AGENT_CHOICE, AGENT)], value="", allow_blank=False, id="start-flow")
            with Vertical(id="start-agent-fields") as fields:
                fields.display = entry is None
                yield Label("ACP agent command (it speaks ACP on its stdin/stdout)")
                yield Input(placeholder="gemini --experimental-acp", id="start-agent")
                yield Label("Workspace (its folder: the session's cwd, its files)")
                yield Input(str(self.workspace), id="start-workspace")
            yield Label("Input (Enter starts, Escape cancels)")
            # The workflow's sample input, selected: Enter starts with it, typing replaces it.
            sample = one_line(about.sample_input, 2000) if about is not None else ""
            yield Input(sample, placeholder="what the run starts with", id="start-input", select_on_focus=False)
            error = Static("", id="start-error")
            error.display = False
            yield error

    def _title(self, *, agent: bool) -> Text:
        if agent:
            return Text("Start an ACP agent")
        assert self.entry is not None
        return Text(f"Start {one_line(self.entry.name, 80)}")  # not markup: a file's name

    @property
    def agent_mode(self) -> bool:
        return self.entry is None or self.query_one("#start-flow", Select).value == AGENT

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

    def _first_field(self) -> Input:
        """Where typing goes first: the input, or the agent's command when there is no workflow."""
        return self.query_one("#start-agent" if self.entry is None else "#start-input", Input)

    def _type_early_keys(self) -> None:
        field = self._first_field()
        field.focus()
        early, self._early = self._early, []
        for key in early:
            if key.key == "enter":
                self._submit()
                return
            if key.key == "backspace":
                field.action_delete_left()
            elif key.is_printable and key.character:
                field.replace(key.character, *sorted(field.selection))  # the selected sample, else nothing

    @on(Select.Changed, "#start-flow")
    def _flow_chosen(self, event: Select.Changed) -> None:
        event.stop()
        agent = self.agent_mode
        self.query_one("#start-agent-fields").display = agent
        self.query_one("#start-dialog").border_title = self._title(agent=agent)
        self.query_one("#start-error", Static).display = False
        if agent:
            self.query_one("#start-agent", Input).focus()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def _submit(self) -> None:
        text = self.query_one("#start-input", Input).value
        if not self.agent_mode:
            self._answer(RunRequest(flow=str(self.query_one("#start-flow", Select).value) or None, input=text))
            return
        from engine.runtime.acp.workflow import BadAgentCommand, prepare_agent

        command = self.query_one("#start-agent", Input).value
        folder = self.query_one("#start-workspace", Input).value.strip()
        try:  # the same workflow as `run --agent` (engine/runtime/acp/workflow.py)
            agent = prepare_agent(command, Path(folder).expanduser() if folder else self.workspace)
        except BadAgentCommand as exc:  # one line, the dialog stays for a correction
            error = self.query_one("#start-error", Static)
            error.update(Text(one_line(f"Cannot start: {exc}", 300), style="bold red"))
            error.display = True
            self.query_one("#start-agent", Input).focus()
            return
        self._answer(RunRequest(flow=None, input=text, agent=agent))

    def action_cancel(self) -> None:
        self._answer(None)

    def _answer(self, request: RunRequest | None) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(request)
