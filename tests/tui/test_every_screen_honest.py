"""Issue 27, the console: every screen shows what happened, to the run it names (the Events
panel of one run, edited arguments as they ran, the rule that asks), and the keyboard is the
person's from the frame a decision appears."""

from __future__ import annotations

import json
from pathlib import Path

from tests.decide.console_support import start, tool_console, waiting
from tests.tui.helpers import demo_console, entry, settle, wait_until
from tui.screens.edit_args import EditArgsScreen
from tui.screens.history import HistoryScreen
from tui.screens.record_detail import RecordDetail
from tui.session import RunRequest
from tui.widgets.decision_pane import DecisionPane
from tui.widgets.event_log import EventLog


def log_lines(app) -> list[str]:
    return [strip.text for strip in app.main.query_one(EventLog).lines]


async def test_the_events_panel_shows_only_the_run_it_names(tmp_path: Path) -> None:
    """Two test-fix runs wait; answering the first while the panel shows the second must not
    write the first's ending into it, and the second's own ending must show when it comes."""
    async with demo_console(tmp_path) as (session, app, pilot):
        one = app.start(entry(session, "test-fix"), RunRequest(None, "one"))
        await wait_until(pilot, lambda: len(session.pending()) == 1, what="run one's question")
        two = app.start(entry(session, "test-fix"), RunRequest(None, "two"))
        await wait_until(pilot, lambda: len(session.pending()) == 2, what="run two's question")
        pane, log = app.main.query_one(DecisionPane), app.main.query_one(EventLog)
        assert pane.pending.escalation.run_id == one.id
        await pilot.press("2")  # run one: relax
        await wait_until(pilot, lambda: one.finished_at is not None, what="run one")
        await wait_until(pilot, lambda: pane.pending is not None and pane.pending.escalation.run_id == two.id,
                         what="run two's question in the pane")
        await settle(pilot)
        assert log.run_id == two.id
        text = "\n".join(log_lines(app))
        assert "Relaxed" not in text and "decided relax" not in text, text  # run one's, not shown here
        await pilot.press("1")  # run two: fix the clock
        await wait_until(pilot, lambda: two.finished_at is not None, what="run two")
        await wait_until(pilot, lambda: any("result: Fixed" in line for line in log_lines(app)), what="run two's result")
        text = "\n".join(log_lines(app))
        assert 'decided fix_clock "Fix the clock source" by human' in text and "Relaxed" not in text, text
        await app.action_quit()


async def test_an_edited_approval_shows_what_ran_in_the_log_and_the_history(tmp_path: Path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        [run] = start(app, session, 1)
        await waiting(pilot, session, 1)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditArgsScreen), 5, "the editor")
        app.screen.query_one("#edit-args").text = json.dumps({"path": "STAGED.txt", "content": "staging"})
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: run.finished_at is not None, 30, "the run")
        await wait_until(pilot, lambda: any("write_file" in line and "confirmed" in line for line in log_lines(app)),
                         what="the tool call in the log")
        text = " ".join(" ".join(log_lines(app)).split())
        assert 'write_file({"path": "STAGED.txt", "content": "staging"}) confirmed, arguments edited' in text, text
        assert "with edited arguments by human" in text, text  # the decision line says it too
        [call] = [e for e in run.events if e.type == "tool_call"]
        assert call.fields["editedArgs"] == {"path": "STAGED.txt", "content": "staging"}
        app.main.query_one("#runs").focus()
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), 5, "the history")
        app.screen.query_one("#history-table").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RecordDetail), 5, "the record")
        detail = " ".join(str(app.screen.query_one("#record-text").render()).split())
        assert "with edited arguments by human" in detail, detail
        assert 'Ran, edited: write_file({"path": "STAGED.txt", "content": "staging"})' in detail, detail
