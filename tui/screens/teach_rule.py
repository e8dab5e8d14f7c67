"""Teach a rule from the decision on screen: "always allow" (`a`) or "always deny" (`n`) exactly
this request in this task, the pattern editable before Enter saves it (Escape: nothing saved).

The dialog shows where the rule goes and which waiting requests it would settle at once; the
session saves it (engine/escalation/teaching.py) and settles them.
"""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static
from textual.widgets.input import Selection

from engine.escalation.teaching import Proposal, TeachError, check
from engine.text_safety import visible
from rules.matcher import BadPattern, Pattern
from rules.model import Action, Rules
from tui.format import one_line


def request_words(proposal: Proposal) -> str:
    esc = proposal.pending.escalation
    if esc.origin.value == "tool_approval":
        return f"the call {one_line(esc.context, 160)} by {one_line(esc.agent, 40)}"
    return f"{esc.reason.value} from {one_line(esc.agent, 40)}: {one_line(esc.question, 120)}"


class TeachRuleScreen(ModalScreen[Proposal | None]):
    DEFAULT_CSS = """
    TeachRuleScreen { align: center middle; }
    #teach-dialog { width: 100; max-width: 100%; height: auto; max-height: 100%; border: thick $accent;
                    background: $surface; padding: 0 1; }
    #teach-dialog Static { width: 100%; height: auto; }
    #teach-pattern { margin: 1 0 0 0; }
    #teach-check { margin-top: 1; }
    #teach-keys { color: $text-muted; margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", priority=True)]
    AUTO_FOCUS = "#teach-pattern"

    def __init__(self, proposal: Proposal, rules: Rules, target: str, waiting: int) -> None:
        super().__init__()
        self.proposal = proposal
        self.rules = rules
        self.target = target
        self.waiting = waiting  # requests now pending, for the preview
        self._answered = False

    def compose(self) -> ComposeResult:
        allow = self.proposal.action is Action.ALLOW
        with Vertical(id="teach-dialog") as dialog:
            dialog.border_title = "Always allow" if allow else "Always deny"
            what = Text()
            what.append("Always allow" if allow else "Always deny", style="bold green" if allow else "bold red")
            what.append(f" {visible(request_words(self.proposal))}\n")
            what.append(f"in task {one_line(self.proposal.task, 60)} (taskOverrides rule), saved to {one_line(self.target, 120)}", style="dim")
            if not allow or self.proposal.pending.escalation.origin.value != "tool_approval":
                what.append("\n" + _meaning(self.proposal), style="dim")
            yield Static(what, id="teach-what")
            yield Static("Pattern (exact match; edit it to widen or narrow):", id="teach-label")
            # Selected from its end back to its start: typing replaces it, and the field shows its
            # beginning (`re:(?-i)^...`), not a cut that reads `i)^...`.
            yield Input(self.proposal.pattern, id="teach-pattern", compact=True, select_on_focus=False)
            yield Static("", id="teach-check", markup=False)
            yield Static("Enter: save   Escape: cancel", id="teach-keys", markup=False)

    def on_mount(self) -> None:
        self.query_one("#teach-pattern", Input).selection = Selection(len(self.proposal.pattern), 0)
        self._check(self.proposal.pattern)

    @on(Input.Changed, "#teach-pattern")
    def _changed(self, event: Input.Changed) -> None:
        self._check(event.value)

    def _check(self, pattern: str) -> bool:
        line = self.query_one("#teach-check", Static)
        proposal = replace(self.proposal, pattern=pattern)
        try:
            check(proposal, self.rules)
        except TeachError as exc:
            line.update(Text(f"✗ {exc}", style="bold red"))
            return False
        line.update(Text(f"✓ matches this request; also settles the waiting ones it matches "
                         f"({self._also(pattern)} of {self.waiting} waiting)", style="green"))
        return True

    def _also(self, pattern: str) -> int:
        """How many waiting requests of this task the pattern matches, this one included."""
        try:
            compiled = Pattern(pattern)
        except BadPattern:
            return 0
        app = self.app
        pending = app.session.pending() if hasattr(app, "session") else [self.proposal.pending]  # type: ignore[attr-defined]
        same = [p for p in pending if p.escalation.task_id == self.proposal.task
                and p.escalation.origin is self.proposal.pending.escalation.origin]
        return sum(1 for p in same if compiled.matches(replace(self.proposal, pending=p).activity()))

    @on(Input.Submitted, "#teach-pattern")
    def _submit(self, event: Input.Submitted) -> None:
        event.stop()
        if self._check(event.value) and not self._answered:
            self._answered = True
            self.dismiss(replace(self.proposal, pattern=event.value))

    def action_cancel(self) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(None)


def _meaning(proposal: Proposal) -> str:
    if proposal.pending.escalation.origin.value == "tool_approval":
        return "deny: the call is refused without asking"
    if proposal.action is Action.ALLOW:
        return "allow: the agent decides on its own, without asking"
    return "deny: the escalation is skipped without asking"
