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
| Tab / shift+Tab | move between the panels (the focused one has a heavy border) |
| up / down, Home / End, PgUp / PgDn | move in a list |
| `s` / Enter on a workflow | start a run (choose flow, type input; Escape cancels) |
| `c` | cancel the selected run (in the decision pane: the run that asks) |
| `d` | the waiting decision, from any screen (also after Escape set it aside) |
| `[` / `]` | previous / next pending decision |
| Enter on an inbox row | show that decision |
| `h` | history of escalations and agent metrics (`x` there: export as JSON lines) |
| `r` | rules: where each comes from, how often it matched; `x` removes a taught one |
| `?` | this help (Escape, `q` or `?` close it) |
| `ctrl+p` | command palette |
| `q` | quit (with decisions waiting or runs active: `y` quits, `n` or Escape stays) |

## In the decision pane
| key | does |
| --- | --- |
| `1`..`9` | choose that line |
| Enter | the highlighted line (the recommended option at first; Deny on a tool approval) |
| up / down | move the highlight |
| `i` | type additional instructions (sent with your choice) |
| Escape / Enter / Tab | leave the instructions field |
| `a` / `n` | always allow / always deny exactly this request in this task: a rule, editable, Enter saves it |
| `e` | edit a tool call's arguments, then ctrl+s approves it with them |
| `b` | batch: the waiting decisions like this one (same task, tool and argument keys, or reason); `a` approves, `n` denies them |
| Escape (on the choices) | set the pane aside; the decision still waits, `d` brings it back |

*Custom response...* opens a field: type the answer and press Enter (Escape: back).
A question without options (a flow's own) opens on that field: type, then Enter.
The countdown shows what happens when nobody answers in time; the header's right side shows
how long the oldest decision has waited.

## History (`h`)
| key | does |
| --- | --- |
| `/` | type a filter: text in the task, agent, reason, question, context or outcome |
| Tab | to the state, decided-by and session filters |
| Enter on a row | the escalation in full: question, context, options, outcome |
| Escape / `h` | back |
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Markdown(HELP)

    def action_close(self) -> None:
        self.dismiss(None)
