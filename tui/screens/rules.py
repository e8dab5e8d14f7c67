"""Rules: every rule the console decides with, in the order they are checked, where each is
written (FILE:LINE), how often it matched since the console opened, and whether it was taught
from a decision; then the task overrides' switches (alwaysAsk, requireConfirmation), where each
is set and how often it made a person be asked. `x` (or Delete) removes the selected rule from the file taught rules go to
(the `--rules` file, or .escalate/rules.yaml); shipped and demo rules are edited by hand."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from engine.escalation.desk import rule_key
from engine.escalation.teaching import TeachError
from rules.model import ALWAYS_ASK, REQUIRE_CONFIRMATION, switch_key
from tui.format import one_line
from tui.session import ConsoleSession
from tui.widgets.key_bar import KeyBar


WHERE_CHARS = 48
# What a task override's switch does, in the pattern column (the switches match every request of the task).
SWITCH_MEANS = {ALWAYS_ASK: "(switch) a person answers: no timeout, an allow asks",
                REQUIRE_CONFIRMATION: "(switch) every tool call waits for approval"}


def short_where(where: str) -> str:
    """FILE:LINE relative to the current folder when under it, else its end (the line stays)."""
    try:
        where = str(Path(where).relative_to(Path.cwd()))
    except ValueError:
        pass
    where = one_line(where, 10_000)
    return where if len(where) <= WHERE_CHARS else "…" + where[-(WHERE_CHARS - 1):]


class RulesScreen(Screen):
    DEFAULT_CSS = """
    #rules-table { height: 1fr; border: round $primary; }
    #rules-note { height: auto; max-height: 3; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,r", "app.pop_screen", "Back"),
        Binding("x,delete", "remove", "Remove rule"),
    ]

    def __init__(self, session: ConsoleSession) -> None:
        super().__init__()
        self.session = session
        self._rules: list = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="rules-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="rules-note", markup=False)
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#rules-table", DataTable)
        for name in ("where", "scope", "action", "matched", "pattern", "taught"):
            table.add_column(name, key=name)
        table.border_title = "Rules"
        self.refresh_rules()
        table.focus()

    def refresh_rules(self) -> None:
        table = self.query_one("#rules-table", DataTable)
        table.clear()
        engine = self.session.engine
        if engine is None:
            self._note("the runtime is still loading")
            return
        desk = engine.desk
        self._rules = desk.rules.all_rules()
        for index, (scope, rule) in enumerate(self._rules):
            where = Text(short_where(rule.where), style="bold" if self.session.book.writable(rule) else "dim")
            table.add_row(where, Text(one_line(scope, 30)), Text(rule.action.value), Text(str(desk.hits[rule_key(rule)])),
                          Text(one_line(rule.pattern.source, 80)), Text(one_line(rule.taught, 40)), key=str(index))
        switches = desk.rules.switches()
        for override, switch in switches:
            where = dict(override.switched_at).get(switch, "")
            table.add_row(Text(short_where(where), style="dim"), Text(one_line(f"task {override.name}", 30)), Text(switch),
                          Text(str(desk.hits[switch_key(override.name, switch)])), Text(SWITCH_MEANS[switch]), Text(""),
                          key=f"switch:{override.name}:{switch}")
        target = short_where(str(self.session.book.target))
        switched = f"{len(switches)} task override switch{'es' if len(switches) != 1 else ''}"
        self._note(f"{len(self._rules)} rules, {switched} · taught rules go to {target} · "
                   "x: remove the selected rule")

    def _note(self, text: str) -> None:
        self.query_one("#rules-note", Static).update(Text(text))

    def action_remove(self) -> None:
        table = self.query_one("#rules-table", DataTable)
        if not self._rules or table.cursor_row is None:
            return
        if table.cursor_row >= len(self._rules):  # a task override's switch: its file is edited by hand
            self.app.notify("a task override's switch is edited in its file (FILE:LINE in the first column)",
                            title="Not removed", severity="warning", markup=False)
            return
        row = table.cursor_row
        _scope, rule = self._rules[row]
        try:
            self.session.forget_rule(rule)
        except TeachError as exc:
            self.app.notify(str(exc), title="Not removed", severity="warning", markup=False)
            return
        self.app.notify(f"{rule.describe()} removed", title="Rule removed", markup=False)
        self.refresh_rules()
        if self._rules:
            table.move_cursor(row=min(row, len(self._rules) - 1))
