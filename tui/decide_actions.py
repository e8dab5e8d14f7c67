"""The console's ways of deciding beyond one key per decision: teach a rule (`a` always allow,
`n` always deny), edit a tool call before approving it (`e`), batch (`b`), the rules screen
(`r`); and the audit each answer carries (how it was given, what was on screen).

A mixin of the app (tui/app.py), kept apart so the app stays about screens and runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.actions import SkipAction
from textual.widgets import Input

from engine.escalation.broker import APPROVE, BrokerEvent, EscalationError
from engine.kernel.model import ASKED_BY, Audit, Decision, Origin, PendingEscalation, ResolvedBy, Response, ResponseType
from tui.format import countdown

if TYPE_CHECKING:
    from tui.bridge import Batcher
    from tui.session import ConsoleSession

MAX_SHOWN = 2000  # characters of "what was shown" kept with a decision


def shown_text(pending: PendingEscalation, now: float) -> str:
    """What the decision pane showed for `pending`, as plain text (kept in the audit)."""
    from tui.widgets.decision_pane import choices_for, pane_text

    lines = [pane_text(pending.escalation, str(pending.extra.get(ASKED_BY) or "")).plain]
    lines += [f"[{n}] {c.label}{' (recommended)' if c.recommended else ''}" for n, c in enumerate(choices_for(pending.escalation), 1)]
    line = countdown(pending, now)
    if line:
        lines.append(line)
    return "\n".join(lines)[:MAX_SHOWN]


class DecideActions:
    """Actions of EscalateApp (which provides session, main, notify, push_screen, focused)."""

    session: "ConsoleSession"
    broker_news: "Batcher[BrokerEvent]"  # the broker's events, batched into one redraw

    # ---- the answer on screen, with its audit ---------------------------------------------------

    def console_audit(self, escalation_id: str, via: str = "console") -> Audit:
        pending = self.seen(escalation_id)
        shown = shown_text(pending, self.session.clock.now()) if pending is not None else ""
        return Audit(via=via, shown=shown)

    def seen(self, escalation_id: str) -> PendingEscalation | None:
        """The request as the pane shows it (the decision is bound to it), else as listed."""
        from tui.widgets.decision_pane import DecisionPane

        shown = self.main.query_one(DecisionPane).pending  # type: ignore[attr-defined]
        if shown is not None and shown.escalation.id == escalation_id:
            return shown
        return self.session.broker.get(escalation_id)

    def _on_screen(self) -> PendingEscalation | None:
        from tui.widgets.decision_pane import DecisionPane

        if isinstance(self.focused, Input):  # type: ignore[attr-defined]
            raise SkipAction()  # the key is a character in a text field
        pending = self.main.query_one(DecisionPane).pending  # type: ignore[attr-defined]
        if pending is None:
            self.notify("no decision is on screen", title="Nothing to decide")  # type: ignore[attr-defined]
        return pending

    # ---- teach a rule ---------------------------------------------------------------------------

    def action_teach(self, action: str) -> None:
        from engine.escalation.teaching import TeachError, propose
        from rules.model import Action

        pending = self._on_screen()
        if pending is None:
            return
        if self.session.engine is None:
            self.notify("the runtime is still loading", title="One moment")  # type: ignore[attr-defined]
            return
        try:
            proposal = propose(pending, Action(action))
        except TeachError as exc:
            self.notify(str(exc), title="No rule can be made", severity="warning", markup=False)  # type: ignore[attr-defined]
            return
        from tui.screens.teach_rule import TeachRuleScreen

        screen = TeachRuleScreen(proposal, self.session.engine.desk.rules, str(self.session.book.target),
                                 len(self.session.pending()))
        self.push_screen(screen, self._save_rule)  # type: ignore[attr-defined]

    def _save_rule(self, proposal: Any) -> None:
        from engine.escalation.teaching import TeachError

        if proposal is None:
            return
        try:
            with self.broker_news.held():  # what it settles: one redraw
                rule, released = self.session.teach(proposal)
        except (TeachError, EscalationError) as exc:
            self.notify(str(exc), title="Rule not saved", severity="error", markup=False)  # type: ignore[attr-defined]
            return
        settled = f"; {len(released)} waiting request{'s' if len(released) != 1 else ''} settled by it" if released else ""
        self.notify(f"{rule.describe()}{settled}", title="Rule saved", markup=False)  # type: ignore[attr-defined]

    # ---- edit before approving ------------------------------------------------------------------

    def action_edit_args(self) -> None:
        pending = self._on_screen()
        if pending is None:
            return
        if pending.escalation.origin is not Origin.TOOL_APPROVAL or not isinstance(pending.extra.get("args"), dict):
            self.notify("only a tool approval's arguments can be edited", title="Nothing to edit")  # type: ignore[attr-defined]
            return
        from tui.screens.edit_args import EditArgsScreen

        esc, tool = pending.escalation, str(pending.extra.get("tool"))
        desk = self.session.engine.desk if self.session.engine is not None else None

        def verdict_of(args: dict[str, Any]) -> str:
            return desk.tool_verdict(esc.task_id, tool, args).gate if desk is not None else "ask"

        def approved(args: dict[str, Any] | None) -> None:
            if args is None:
                return
            edited = None if args == pending.extra.get("args") else args
            response = Response(ResponseType.OPTION, selected_option=APPROVE, edited_args=edited)
            self.answer(esc.id, response, via="console (edited)" if edited is not None else "console")  # type: ignore[attr-defined]

        self.push_screen(EditArgsScreen(pending, verdict_of), approved)  # type: ignore[attr-defined]

    # ---- batch ----------------------------------------------------------------------------------

    def action_batch(self) -> None:
        from engine.escalation.batch import alike

        pending = self._on_screen()
        if pending is None:
            return
        from tui.screens.batch import BatchScreen

        batch = BatchScreen(alike(self.session.pending(), pending), self.session.clock.now())
        self.push_screen(batch, self._batch_chosen)  # type: ignore[attr-defined]

    def _batch_chosen(self, choice: Any) -> None:
        from engine.escalation.batch import batch_response, kind_of, request_text

        if choice is None:
            return
        now = self.session.clock.now()
        decisions = []
        for row in choice.rows:
            pending = self.session.broker.get(row.id)
            # Only the request the row showed: one that reads otherwise now is left waiting.
            if pending is None or request_text(pending) != row.request:
                continue
            response = batch_response(pending, choice.approve)
            if response is None:
                continue
            via = f"console batch of {len(choice.rows)} ({kind_of(pending)})"
            decisions.append(Decision(row.id, response, ResolvedBy.HUMAN, now, audit=Audit(via=via, shown=row.shown)))
        try:
            with self.broker_news.held():  # one redraw for the batch
                applied = self.session.broker.apply_many(decisions)
        except EscalationError as exc:
            self.notify(str(exc), title="Batch not sent", severity="warning", markup=False)  # type: ignore[attr-defined]
            return
        verb = "approved" if choice.approve else "denied"
        left = len(choice.rows) - len(applied)
        self.notify(f"{len(applied)} {verb}" + (f", {left} left waiting" if left else ""), title="Batch")  # type: ignore[attr-defined]

    # ---- the rules screen -----------------------------------------------------------------------

    def action_rules(self) -> None:
        from tui.screens.rules import RulesScreen

        if not isinstance(self.screen, RulesScreen):  # type: ignore[attr-defined]
            self.push_screen(RulesScreen(self.session))  # type: ignore[attr-defined]
