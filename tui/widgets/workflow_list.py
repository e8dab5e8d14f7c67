"""The workspace's workflows; Enter on one opens the start-run dialog."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from engine.text_safety import visible
from tui.format import one_line
from tui.session import WorkflowEntry
from tui.widgets.steady_scrollbars import SteadyScrollbars


def workflow_prompt(entry: WorkflowEntry) -> Text:
    """Its name, then what it does (its description, else its flows), or why it cannot run."""
    line = Text(one_line(entry.name, 200), style="bold")
    if entry.error:  # the first diagnostic line: it quotes the file's name
        line.append(f"\n  {visible(entry.error)}", style="red")
    elif entry.about is not None and entry.about.description:
        line.append(f"\n  {one_line(entry.about.description, 200)}", style="dim")
    elif entry.flows:
        line.append(f"\n  {one_line(', '.join(entry.flows), 200)}", style="dim")
    else:
        line.append("\n  loading…", style="dim")
    return line


class WorkflowList(SteadyScrollbars, OptionList):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)

    def show(self, entries: list[WorkflowEntry]) -> None:
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(Option(workflow_prompt(e), id=str(i)) for i, e in enumerate(entries))
        if entries:
            self.highlighted = min(highlighted or 0, len(entries) - 1)
