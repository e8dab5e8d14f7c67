"""Hostile file names, agent names and agent text never reach the terminal as control characters.

A workflow file named with an OSC 52 sequence (and a clear-screen, a BEL, a C1 CSI, a bidi
override, DEL), an agent that hands off to a "target" made of the same, asks a question with it
in every field, a store whose earlier sessions hold it everywhere, and a file that is not UTF-8.
Every screen is rendered as the terminal would get it (the compositor's full frame) and must hold
none of it, while still showing the names (as visible signs).
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from textual.command import CommandPalette

from engine.kernel.model import OnTimeout, Option
from engine.kernel.clock import RealClock
from engine.escalation.store import iso
from rules import load_rules
from tests.hostile_text import HOSTILE, forbidden_in, hostile_workspace
from tests.store.store_helpers import line
from tests.tui.helpers import SIZE, ask, make_app, make_session, pending, wait_until
from tui.format import terminal_title
from tui.screens.history import HistoryScreen
from tui.screens.start_run import StartRunScreen
from tui.session import RunRequest

SHOWN = "␛]52;c;cHduZWQ=␇"  # the OSC 52 sequence as the console shows it


def hostile_store(path: Path) -> None:
    """Earlier sessions: an answered escalation, a hand-off and a failed run, all hostile."""
    h = HOSTILE
    at = iso(1_763_000_000.0)
    path.write_text(
        line("raised", at, id="e1", taskId=f"t{h}", runId=f"r{h}", agent=f"ag{h}", reason="architecture_decision",
             question=f"q{h}", context=f"c{h}", options=[{"id": f"o{h}", "label": f"l{h}", "description": "",
                                                         "recommended": False}],
             allowAgentDecision=False, timeout=None, origin="agent_text",
             policy={"deadline": None, "onTimeout": "wait", "optionId": None, "timeoutSeconds": None}, extra={})
        + line("resolved", at, id="e1", responseType="option", selectedOption=f"o{h}",
               additionalInstructions=f"i{h}", resolvedBy="human", note=f"n{h}", stopsTask=False)
        + line("agent_escalation", at, source=f"s{h}", target=f"x{h}", approved=False, reason=f"r{h}", task=f"t{h}",
               denial="loop")
        + line("run", at, id=f"r{h}", task=f"t{h}", workflow=f"w{h}", flow=None, input=f"i{h}", status="failed",
               result=None, error=f"e{h}", startedAt=at)
    )


def screen_text(app) -> str:
    """Every character of the screen's full frame, as the terminal would get it: what
    App.export_screenshot renders, as text (Textual's own cursor moves and colours are control
    segments, left out; everything else is a character written to the terminal)."""
    console = Console(width=app.size.width, height=app.size.height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text(styles=False)


def assert_clean(app, where: str) -> str:
    """The screen holds no forbidden character; returns its text."""
    text = screen_text(app)
    assert forbidden_in(text) == [], f"control characters reach the terminal from {where}"
    return text


async def test_main_screen_shows_hostile_names_and_agent_text_as_signs(tmp_path: Path) -> None:
    workflows, rules = hostile_workspace(tmp_path)
    session = make_session(workflows, rules=load_rules(rules), workspace=tmp_path)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        await wait_until(pilot, lambda: session.workflows[1].error, 60, "the compile error")
        assert_clean(app, "the workflow list")  # both names, and the error line quoting one

        run = app.start(session.workflows[0], RunRequest(None, f"in{HOSTILE}"))
        await wait_until(pilot, lambda: session.pending(), 60, "the question")
        await wait_until(pilot, lambda: any(e.type == "human_escalation" for e in run.events), 60, "its event")
        app.main.query_one("#runs").tick()  # the run's latest event, as the clock would draw it
        await pilot.pause(0.2)  # run events are drawn in batches
        shot = assert_clean(app, "runs, events, inbox and the decision pane")
        assert SHOWN in shot  # shown, not dropped

        app.start_workflow(1)  # does not compile: a toast quoting its name and error
        app.start(session.workflows[0], RunRequest("nope", ""))  # an unknown flow: the run fails, a toast names it
        await pilot.pause(0.2)
        shot = assert_clean(app, "notifications")
        assert "broken␛]52;c;" in shot and "txt.exe␡� failed" in shot  # the two toasts' titles

        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), 60, "the palette")
        await pilot.pause(0.3)
        assert_clean(app, "the command palette")
        await pilot.press("escape")

        await wait_until(pilot, lambda: not isinstance(app.screen, CommandPalette), 60, "the main screen")
        app.start_workflow(0)
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), 60, "the start dialog")
        await pilot.pause()
        assert_clean(app, "the start dialog")


async def test_history_shows_hostile_records_of_this_and_earlier_sessions_as_signs(tmp_path: Path) -> None:
    workflows, rules = hostile_workspace(tmp_path)
    store = tmp_path / "history.jsonl"
    hostile_store(store)
    session = make_session(workflows[:1], rules=load_rules(rules), workspace=tmp_path, store=store,
                           clock=RealClock(), db_url=f"sqlite:///{tmp_path / 'escalate.db'}")
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        handle = app.start(session.workflows[0], RunRequest(None, "go"))
        await wait_until(pilot, lambda: session.pending(), 60, "the question")
        # Recorded although its task (the file's stem) had a byte that is not UTF-8 in it.
        (stored,) = session.db.pending_escalations([handle.id])
        assert stored["payload"]["escalation"]["task_id"].startswith(f"evil{HOSTILE}\ufffd")
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), 60, "the history")
        await pilot.pause()
        shot = assert_clean(app, "the history screen (table and metrics)")
        assert SHOWN in shot


async def test_a_decision_with_every_field_hostile_and_its_toast_elsewhere(tmp_path: Path) -> None:
    """The pane, the inbox and the "DECISION REQUIRED" toast shown over another screen; the
    agent's name too (a workflow's names are identifiers, a store's or a future source's need not be)."""
    session = make_session()
    clock = session.clock
    h = HOSTILE
    asked = pending(clock, task=f"t{h}", run_id="r1", question=f"q{h}", context=f"c{h}", timeout=60,
                    on_timeout=OnTimeout.RECOMMENDED, allow_agent_decision=False,
                    options=(Option(f"o{h}", f"l{h}", f"d{h}", recommended=True),))
    asked.escalation = replace(asked.escalation, agent=f"ag{h}")
    app = make_app(session)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("h")  # the history screen is on top: the new decision is also a toast
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), 60, "the history")
        waiting = ask(session, asked)
        await wait_until(pilot, lambda: session.pending(), 60, "the question")
        await pilot.pause(0.2)
        shot = assert_clean(app, "the history screen and the toast over it")
        assert "DECISION REQUIRED [t␛]52;c;" in shot and "ag␛]52;c;" in shot
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is app.main, 60, "the main screen")
        await pilot.pause(0.2)
        shot = assert_clean(app, "the decision pane and the inbox")
        assert f"agent ag{SHOWN}" in shot and f"option o{SHOWN}" in shot  # the countdown names the default option
    waiting.cancel()


def test_the_terminal_title_sequence_ends_where_it_should() -> None:
    """OSC 2 is ended by BEL: a BEL or ESC inside the title would end it and start another
    sequence of the title's choosing (the title names a task when decisions wait)."""
    sequence = terminal_title(f"escalate · t{HOSTILE}")
    assert sequence.startswith("\x1b]2;") and sequence.endswith("\x07")
    assert forbidden_in(sequence[4:-1]) == []


async def test_the_app_title_is_sanitized_wherever_it_is_shown() -> None:
    app = make_app(make_session())
    async with app.run_test(size=SIZE) as pilot:
        app.title = f"escalate · t{HOSTILE}"
        await pilot.pause()
        assert SHOWN in assert_clean(app, "the main screen's header")
        await pilot.press("h")  # Textual's own Header
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), 60, "the history")
        assert SHOWN in assert_clean(app, "the history screen's header")
