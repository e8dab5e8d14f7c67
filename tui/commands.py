"""Command palette entries (ctrl+p): start any workflow or an ACP agent, jump to any pending decision, screens."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Callable

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from tui.format import one_line

if TYPE_CHECKING:
    from tui.app import EscalateApp


class EscalateCommands(Provider):
    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app: EscalateApp = self.app  # type: ignore[assignment]
        session = app.session
        commands: list[tuple[str, Callable[[], object], str]] = []
        for index, entry in enumerate(session.workflows):
            commands.append((f"Start run: {one_line(entry.name, 80)}", partial(app.start_workflow, index),
                             one_line(str(entry.path), 200)))
        for pending in session.pending():
            esc = pending.escalation
            commands.append((
                f"Decide [{one_line(esc.task_id, 40)}]: {one_line(esc.question, 50)}",
                partial(app.main.select_decision, esc.id),
                f"{esc.reason.value} from {one_line(esc.agent, 40)}",
            ))
        commands += [
            ("Start an ACP agent", partial(app.start_workflow, None), "a coding agent's command (Agent Client Protocol), in a workspace"),
            ("Cancel the selected run", app.action_cancel_run, "stops the run highlighted in Runs"),
            ("Next pending decision", partial(app.main.move_decision, 1), "the decision pane moves to the next one"),
            ("History of escalations and metrics", app.action_history, "past decisions, agent success rates"),
            ("Help: keys and screens", app.action_help, "every key binding"),
        ]
        return commands

    # Entries carry agent text and task names: shown as plain Content, never parsed as markup
    # (Textual's DiscoveryHit, Matcher.highlight and help strings all read markup).
    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands():
            yield DiscoveryHit(Content(name), callback, text=name, help=escape(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score, offsets = matcher.fuzzy_search.match(matcher.query, name)
            if score > 0:
                shown = Content(name)
                for offset in offsets:
                    if not name[offset].isspace():
                        shown = shown.stylize(matcher.match_style, offset, offset + 1)
                yield Hit(score, shown, callback, text=name, help=escape(help_text))
