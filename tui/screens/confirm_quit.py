"""Quitting with decisions waiting or runs active asks first: they are not lost (durable runs
continue the next time escalate opens), but the person should know they leave them."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


def quit_question(decisions: int, runs: int) -> str:
    parts = []
    if decisions:
        parts.append(f"{decisions} decision{'s' if decisions != 1 else ''} waiting")
    if runs:
        parts.append(f"{runs} run{'s' if runs != 1 else ''} active")
    return f"{', '.join(parts)}: they continue next time you open escalate. Quit? y/n"


class ConfirmQuit(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmQuit { align: center middle; }
    ConfirmQuit > Vertical { width: auto; max-width: 90%; height: auto; border: thick $warning; padding: 1 2;
                             background: $surface; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Quit", priority=True),
        Binding("n", "answer(False)", "Stay", priority=True),
        Binding("escape", "answer(False)", "Stay", priority=True),
        Binding("q", "answer(False)", "Stay", show=False, priority=True),
    ]

    def __init__(self, decisions: int, runs: int) -> None:
        super().__init__()
        self.question = quit_question(decisions, runs)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, markup=False, id="quit-question")

    def action_answer(self, quit_now: bool) -> None:
        self.dismiss(quit_now)
