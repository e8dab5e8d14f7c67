"""The help screen: every key, where it works, and what the pane's choices mean."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# escalate console

Runs workflows and brings every decision an agent asks for to you.

## Everywhere
| key | does |
| --- | --- |
| `s` / Enter on a workflow | start a run (choose flow, type input) |
| `c` | cancel the selected run |
| `d` | jump to the decision pane |
| `[` / `]` | previous / next pending decision |
| `h` | history of escalations and agent metrics (`x` there: export as JSON lines) |
| `r` | rules: where each comes from, how often it matched; `x` removes a taught one |
| `?` | this help |
| `ctrl+p` | command palette |
| `q` | quit |

## In the decision pane
| key | does |
| --- | --- |
| `1`..`9` | choose that line |
| Enter | the highlighted line (the recommended option at first) |
| up / down | move the highlight |
| `i` | type additional instructions (sent with your choice) |
| Escape / Enter / Tab | leave the instructions field |
| `a` / `n` | always allow / always deny exactly this request in this task: a rule, editable, Enter saves it |
| `e` | edit a tool call's arguments, then ctrl+s approves it with them |
| `b` | batch: the waiting decisions like this one (same tool or reason); `a` approves, `n` denies them |

*Custom response...* opens a field: type the answer and press Enter.
The countdown shows what happens when nobody answers in time.
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)

    def action_close(self) -> None:
        self.dismiss(None)
