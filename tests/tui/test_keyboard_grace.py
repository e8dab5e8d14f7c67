"""The keyboard through a queue that empties for a moment (issue 25: 20 agents, the queue empties
at one answer in two): it waits MainScreen's KEYBOARD_GRACE before going back, so the next
decision takes it without the workflow list being restyled and drawn twice; a key typed meanwhile still acts
where the keyboard would have gone back to, and with no decision the keyboard goes back."""

from __future__ import annotations

import pytest
from textual.widget import Widget
from textual.widgets import OptionList

import tui.screens.main
from tests.tui.helpers import SIZE, ask, decided, make_app, make_session, pending, settle, wait_until
from tui.widgets.decision_pane import DecisionPane
from tui.widgets.key_bar import KeyBar
from tui.widgets.workflow_list import WorkflowList


async def test_a_decision_raised_soon_after_the_queue_empties_moves_no_focus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tui.screens.main, "KEYBOARD_GRACE", 60.0, raising=False)  # "soon", whatever the host's load
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        workflows = app.main.query_one(WorkflowList)
        workflows.focus()
        await settle(pilot)
        moves: list[Widget | None] = []
        app.main.watch(app.main, "focused", lambda widget: moves.append(widget), init=False)
        pane = app.main.query_one(DecisionPane)
        choices = app.main.query_one("#pane-choices", OptionList)
        first = ask(session, pending(session.clock, run_id="r1", task="first"))
        await wait_until(pilot, lambda: app.focused is choices, what="the pane")
        await pilot.press("1")
        assert (await decided(first)).response.selected_option == "opt1"
        await wait_until(pilot, lambda: not pane.visible, what="the pane hidden")
        await settle(pilot)
        assert app.focused is None  # waiting to go back
        # No decision on screen: its keys are not offered meanwhile.
        assert "Instructions" not in [item.description for item in app.main.query_one(KeyBar).items]
        second = ask(session, pending(session.clock, run_id="r2", task="second"))
        await wait_until(pilot, lambda: pane.visible and pane.pending is not None
                         and pane.pending.escalation.task_id == "second", what="the second decision")
        await settle(pilot)
        # The old code gave the keyboard back to the list and took it again: [choices, workflows,
        # choices]; now the list is neither focused nor blurred: [choices, None, choices].
        assert workflows not in moves and moves[-1] is choices, moves
        assert not workflows.has_focus and app.focused is choices
        await pilot.press("2")
        assert (await decided(second)).response.selected_option == "opt2"


async def test_with_no_decision_after_the_grace_the_keyboard_goes_back_by_itself() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        workflows = app.main.query_one(WorkflowList)
        workflows.focus()
        await settle(pilot)
        task = ask(session, pending(session.clock))
        await wait_until(pilot, lambda: app.main.query_one(DecisionPane).has_focus_within, what="the pane")
        await pilot.press("1")
        await decided(task)
        await wait_until(pilot, lambda: app.focused is workflows, what=f"the keyboard back on the list, not {app.focused}")
