"""The workspace's workflows; Enter on one opens the start-run dialog."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from tui.session import WorkflowEntry


def workflow_prompt(entry: WorkflowEntry) -> Text:
    line = Text(entry.name, style="bold")
    if entry.error:
        line.append(f"\n  {entry.error}", style="red")
    elif entry.flows:
        line.append(f"\n  {', '.join(entry.flows)}", style="dim")
    else:
        line.append("\n  loading…", style="dim")
    return line


class WorkflowList(OptionList):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, markup=False)

    def show(self, entries: list[WorkflowEntry]) -> None:
        highlighted = self.highlighted
        self.clear_options()
        self.add_options(Option(workflow_prompt(e), id=str(i)) for i, e in enumerate(entries))
        if entries:
            self.highlighted = min(highlighted or 0, len(entries) - 1)
