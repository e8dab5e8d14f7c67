"""Quitting with decisions waiting or runs active asks first: they are not lost (durable runs
continue the next time escalate opens), but the person should know they leave them."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


ASK = "Quit? y/n"


def what_stays(decisions: int, runs: int) -> str:
    parts = []
    if decisions:
        parts.append(f"{decisions} decision{'s' if decisions != 1 else ''} waiting")
    if runs:
        parts.append(f"{runs} run{'s' if runs != 1 else ''} active")
    return f"{', '.join(parts)}: they continue next time you open escalate."


class ConfirmQuit(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmQuit { align: center middle; }
    ConfirmQuit > Vertical { width: 64; max-width: 95%; height: auto; border: thick $warning; padding: 1 2;
                             background: $surface; }
    ConfirmQuit Static { width: 100%; height: auto; }
    #quit-question { margin-top: 1; text-style: bold; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "Quit", priority=True),
        Binding("n", "answer(False)", "Stay", priority=True),
        Binding("escape", "answer(False)", "Stay", priority=True),
        Binding("q", "answer(False)", "Stay", show=False, priority=True),
    ]

    def __init__(self, decisions: int, runs: int) -> None:
        super().__init__()
        self.stays = what_stays(decisions, runs)
        self.question = f"{self.stays} {ASK}"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.stays, markup=False)
            yield Static(ASK, markup=False, id="quit-question")  # a line of its own: never cut

    def action_answer(self, quit_now: bool) -> None:
        self.dismiss(quit_now)
