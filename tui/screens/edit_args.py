"""Edit a tool call's arguments before approving it (`e` on a tool approval): the JSON in an
editor, checked as you type (a JSON object fitting the tool's schema; what the rules say of the
edited call), approved
with ctrl+s, or Escape to go back without answering. The tool then runs with the edited
arguments, after the rules checked them again (engine/escalation/desk.py)."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from engine.runtime.tools.edits import edited_args
from engine.escalation.desk import Gate
from engine.kernel.model import PendingEscalation
from tui.format import one_line


class EditArgsScreen(ModalScreen[dict[str, Any] | None]):
    DEFAULT_CSS = """
    EditArgsScreen { align: center middle; }
    #edit-dialog { width: 100; max-width: 100%; height: auto; max-height: 100%; border: thick $accent;
                   background: $surface; padding: 0 1; }
    #edit-dialog Static { width: 100%; height: auto; }
    #edit-args { height: 12; min-height: 4; }
    #edit-keys { color: $text-muted; }
    """
    BINDINGS = [
        Binding("ctrl+s", "approve", "Approve edited", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
    ]
    AUTO_FOCUS = "#edit-args"

    def __init__(self, pending: PendingEscalation, verdict_of: Any) -> None:
        """`verdict_of(args)`: what the rules say of the call with these arguments."""
        super().__init__()
        self.pending = pending
        self.tool = str(pending.extra.get("tool", "tool"))
        self.original = dict(pending.extra.get("args") or {})
        self._verdict_of = verdict_of
        self._answered = False

    def compose(self) -> ComposeResult:
        with Vertical(id="edit-dialog") as dialog:
            dialog.border_title = Text(f"Edit, then approve: {one_line(self.tool, 60)}")
            yield Static(Text(f"{one_line(self.pending.escalation.agent, 40)} asks to call {one_line(self.tool, 60)} "
                              f"(task {one_line(self.pending.escalation.task_id, 40)}). The tool runs with these arguments:"),
                         id="edit-what")
            yield TextArea(json.dumps(self.original, indent=2, ensure_ascii=False), language=None, id="edit-args",
                           soft_wrap=True, show_line_numbers=False)
            yield Static("", id="edit-check", markup=False)
            yield Static("ctrl+s: approve with these arguments   Escape: back to the decision", id="edit-keys", markup=False)

    def on_mount(self) -> None:
        self._check()

    @on(TextArea.Changed, "#edit-args")
    def _changed(self) -> None:
        self._check()

    def _check(self) -> dict[str, Any] | None:
        line = self.query_one("#edit-check", Static)
        value = edited_args(self.query_one("#edit-args", TextArea).text, self.tool)
        if isinstance(value, str):
            line.update(Text(f"✗ {value}", style="bold red"))
            return None
        verdict = self._verdict_of(value)
        if verdict in (Gate.DENY, Gate.STOP):
            line.update(Text("✗ the rules refuse this call: approving it would deny it", style="bold red"))
        elif value == self.original:
            line.update(Text("unchanged: ctrl+s approves the call as asked", style="dim"))
        else:
            line.update(Text(f"✓ edited; the rules {'allow it' if verdict == Gate.ALLOW else 'leave it to you' if verdict == Gate.ASK else verdict}",
                             style="green"))
        return value

    def action_approve(self) -> None:
        value = self._check()
        if value is not None and not self._answered:
            self._answered = True
            self.dismiss(value)

    def action_cancel(self) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(None)
