"""Issue 27, the console: every screen shows what happened, to the run it names (the Events
panel of one run, edited arguments as they ran, the rule that asks), and the keyboard is the
person's from the frame a decision appears."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList

from engine.escalation.broker import RAISED
from engine.kernel.clock import RealClock
from engine.kernel.model import OnTimeout, Option, Origin, Reason, ResponseType
from tests.decide.console_support import start, tool_console, waiting
from tests.tui.helpers import SIZE, ask, decided, demo_console, entry, make_app, make_session, pending, settle, wait_until
from tests.tui.test_pane import burst, screen_lines
from tui.screens.edit_args import EditArgsScreen
from tui.screens.history import HistoryScreen
from tui.screens.record_detail import RecordDetail
from tui.screens.rules import RulesScreen
from tui.screens.teach_rule import TeachRuleScreen
from tui.session import RunRequest
from tui.widgets.decision_pane import DecisionPane
from tui.widgets.event_log import EventLog
from tui.widgets.header import ConsoleHeader
from tui.widgets.key_bar import KeyBar


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
        await wait_until(pilot, lambda: isinstance(app.screen, EditArgsScreen), 60, "the editor")
        app.screen.query_one("#edit-args").text = json.dumps({"path": "STAGED.txt", "content": "staging"})
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: run.finished_at is not None, 60, "the run")
        await wait_until(pilot, lambda: any("write_file" in line and "confirmed" in line for line in log_lines(app)),
                         what="the tool call in the log")
        text = " ".join(" ".join(log_lines(app)).split())
        assert 'write_file({"path": "STAGED.txt", "content": "staging"}) confirmed, arguments edited' in text, text
        assert "with edited arguments by human" in text, text  # the decision line says it too
        [call] = [e for e in run.events if e.type == "tool_call"]
        assert call.fields["editedArgs"] == {"path": "STAGED.txt", "content": "staging"}
        app.main.query_one("#runs").focus()
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen), 60, "the history")
        app.screen.query_one("#history-table").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RecordDetail), 60, "the record")
        detail = " ".join(str(app.screen.query_one("#record-text").render()).split())
        assert "with edited arguments by human" in detail, detail
        assert 'Ran, edited: write_file({"path": "STAGED.txt", "content": "staging"})' in detail, detail
        assert "Asked by: taskOverrides.deploy: requireConfirmation (" in detail and "rules.yaml:5)" in detail, detail


def _flow_question(clock, run_id: str = "r9"):
    return pending(clock, task="release", run_id=run_id, question="Which tag do we release?", context="", options=(),
                   allow_agent_decision=False, reason=Reason.OTHER, origin=Origin.FLOW, timeout=None)


def _type_when_raised(session, app, text: str) -> None:
    """The person starts typing the moment the question is raised: the keys are queued right
    behind the broker's news, before any frame shows the pane."""
    def typed(event) -> None:
        if event.kind == RAISED and event.pending.escalation.origin is Origin.FLOW:
            burst(app, *text, "enter")
    session.broker.subscribe(typed)  # after the console's own subscription: its news comes first


@pytest.mark.parametrize("after_another", [False, True])
async def test_keys_typed_as_a_flows_question_opens_all_land_in_its_answer(after_another: bool) -> None:
    session = make_session()
    app = make_app(session)
    frames: list[tuple[bool, object]] = []
    original = app._display

    def display(screen, renderable) -> None:
        if renderable is not None and screen is app.main:
            pane = app.main.query_one(DecisionPane)
            frames.append((pane.visible, app.focused))
        original(screen, renderable)

    app._display = display  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        first = ask(session, pending(session.clock)) if after_another else None
        if first is not None:
            await settle(pilot)
        if first is None:
            _type_when_raised(session, app, "v1.4.2 now, send it")
        question = ask(session, _flow_question(session.clock))
        if first is not None:
            await settle(pilot)
            await pilot.press("1")  # the first answered: the flow's question follows in the pane
            assert (await decided(first)).response.selected_option == "opt1"
            burst(app, *"v1.4.2 now, send it", "enter")  # typed at once (a `1` there would skip the task)
        response = (await decided(question)).response
        assert (response.response_type, response.text_response, response.additional_instructions) == \
            (ResponseType.TEXT, "v1.4.2 now, send it", None)
        assert app.screen is app.main  # no `s` slipped through to start a run
        custom = app.main.query_one("#pane-custom", Input)
        assert all(focused is not app.main.query_one("#workflows") for visible, focused in frames if visible), frames
        if not after_another:
            assert custom in [focused for visible, focused in frames if visible] or not frames[-1][0]


async def test_a_decision_raised_while_the_pane_is_aside_brings_it_back() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        first = ask(session, pending(session.clock, timeout=60, on_timeout=OnTimeout.AGENT_DECIDE))
        await settle(pilot)
        pane, header = app.main.query_one(DecisionPane), app.main.query_one(ConsoleHeader)
        assert "default in" not in header.status  # on screen, the pane counts down
        await pilot.press("escape")
        await settle(pilot)
        assert not pane.visible
        header.tick()  # what its 1 s timer does
        assert header.status == "oldest 0s · default in 1:00"  # set aside, its countdown still shows
        second = pending(session.clock, run_id="r2", question="Relax the expiry check?", timeout=90,
                         on_timeout=OnTimeout.AGENT_DECIDE)
        task = ask(session, second)
        await settle(pilot)
        assert pane.visible and pane.pending.escalation.id == second.escalation.id
        assert app.focused is app.main.query_one("#pane-choices", OptionList)
        await pilot.press("2")
        assert (await decided(task)).response.selected_option == "opt2"
        await settle(pilot)
        assert pane.visible and pane.pending.escalation.id != second.escalation.id and not first.done()


async def test_the_pane_and_the_rules_screen_name_the_override_that_asks(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        run = app.start(entry(session, "deploy-production"), RunRequest(None, "release"))
        await wait_until(pilot, lambda: session.pending(), what="the write_file approval")
        await settle(pilot)
        text = " ".join(str(app.main.query_one("#pane-text").render()).split())
        assert "Asked by: taskOverrides.deploy-production: requireConfirmation (" in text, text
        assert "engine/demo/rules.yaml:7)" in text and "no timeout: taskOverrides.deploy-production: alwaysAsk (" in text, text
        assert "engine/demo/rules.yaml:6)" in text, text
        await pilot.press("1")  # approve
        await wait_until(pilot, lambda: run.finished_at is not None, 60, "the run")
        app.main.query_one("#runs").focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: isinstance(app.screen, RulesScreen), 60, "the rules screen")
        table = app.screen.query_one("#rules-table")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        switches = {r[2]: r for r in rows if r[1] == "task deploy-production"}
        assert set(switches) == {"alwaysAsk", "requireConfirmation"}, rows
        assert switches["requireConfirmation"][0].endswith("rules.yaml:7") and switches["requireConfirmation"][3] == "1"
        assert switches["alwaysAsk"][0].endswith("rules.yaml:6") and switches["alwaysAsk"][3] == "1"
        assert "2 task override switches" in str(app.screen.query_one("#rules-note").render())
        await app.action_quit()


def _approval(clock, run_id: str):
    p = pending(clock, task="deploy", run_id=run_id, origin=Origin.TOOL_APPROVAL, allow_agent_decision=False,
                reason=Reason.SECURITY_CONCERN, options=(Option("approve", "Approve: run write_file"), Option("deny", "Deny")))
    p.extra.update({"tool": "write_file", "args": {"path": f"{run_id}.txt"}})
    return p


async def test_the_pane_key_bar_shows_the_keys_that_apply_to_the_decision_on_screen() -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        ask(session, pending(session.clock))  # an agent's question: a rule can be taught, nothing to edit or batch
        await settle(pilot)
        bar = app.main.query_one(KeyBar)
        keys = {item.key for item in bar.items}
        assert {"a", "n"} <= keys and not {"e", "b"} & keys, keys
        assert "a Allow" in bar.render().plain and "n Deny" in bar.render().plain
        await pilot.press("1")
        ask(session, _approval(session.clock, "r2"))
        await settle(pilot)
        keys = {item.key for item in bar.items}
        assert {"a", "n", "e"} <= keys and "b" not in keys, keys  # one approval: no batch yet
        ask(session, _approval(session.clock, "r3"))
        await settle(pilot)
        assert {"a", "n", "e", "b"} <= {item.key for item in bar.items}  # two alike: b applies
        line = bar.render().plain
        for label in ("e Edit", "b Batch", "? Help", "q Quit"):
            assert label in line, line


async def test_the_teach_field_shows_a_long_patterns_beginning(tmp_path: Path) -> None:
    async with demo_console(tmp_path) as (session, app, pilot):
        app.start(entry(session, "deploy-production"), RunRequest(None, "release"))
        await wait_until(pilot, lambda: session.pending(), what="the write_file approval")
        await settle(pilot)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, TeachRuleScreen), 60, "the teach dialog")
        await settle(pilot)
        field = app.screen.query_one("#teach-pattern", Input)
        assert len(field.value) > field.content_size.width  # longer than the field: something is cut
        lines = [line for line in screen_lines(app) if "write_file path" in line and "Always" not in line]
        assert lines and "re:(?-i)^write_file path: RELEASED" in lines[0], lines
        await pilot.press("x")  # typing replaces the whole pattern, as before
        assert field.value == "x"
        await pilot.press("escape")
        await app.action_quit()


async def test_a_rule_taught_from_the_decision_on_screen_is_not_ended_without_you(tmp_path: Path) -> None:
    async with tool_console(tmp_path) as (session, app, pilot):
        toasts: list[str] = []
        notify = app.notify

        def recorded(message: str, **kw) -> None:
            toasts.append(f"{kw.get('title', '')}: {message}")
            notify(message, **kw)

        app.notify = recorded  # type: ignore[method-assign]
        runs = start(app, session, 2)
        await waiting(pilot, session, 2)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, TeachRuleScreen), 60, "the teach dialog")
        await pilot.press("enter")
        await wait_until(pilot, lambda: all(r.finished_at for r in runs), 60, "both runs")
        assert any(t.startswith("Rule saved") for t in toasts), toasts
        assert not any("ended without you" in t for t in toasts), toasts


SHELL_AGENT = """\
streetrace v1

model main = anthropic/claude-sonnet-4

tool sh = builtin streetrace.cli

prompt runner_instructions: \"\"\"You run commands.\"\"\"

agent runner:
    tools sh
    instruction runner_instructions

flow main:
    $out = run agent runner $input
    return $out
"""

SHELL_SCRIPT = """\
agents:
  runner:
    - tool: run_command
      args: {command: "echo hello-from-the-shell; echo oops >&2"}
    - "ran it"
"""


async def test_a_commands_output_is_in_its_runs_log(tmp_path: Path) -> None:
    sr = tmp_path / "shell.sr"
    sr.write_text(SHELL_AGENT)
    sr.with_suffix(".yaml").write_text(SHELL_SCRIPT)
    ws = tmp_path / "ws"
    ws.mkdir()
    session = make_session([sr], workspace=ws)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        run = app.start(session.workflows[0], RunRequest(None, "go"))
        await wait_until(pilot, lambda: run.finished_at is not None, 60, "the run")
        await wait_until(pilot, lambda: any("result: ran it" in line for line in log_lines(app)), what="the result")
        text = " ".join(" ".join(log_lines(app)).split())
        assert "run_command: exit 0: stdout: hello-from-the-shell · stderr: oops" in text, text


DEMO = Path(__file__).parents[2] / "engine" / "demo"


async def test_a_run_of_another_process_shows_its_recorded_events(tmp_path: Path) -> None:
    """`escalate run --wait` keeps its run (its owner is alive): the console opened on its
    database shows the decision, and the Events panel that run's events, read from there."""
    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    other = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", str(DEMO / "auth-refactor.sr"), "--script", str(DEMO / "auth-refactor.yaml"),
         "--input", "Fix login", "--db", db_url, "--wait"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        session = make_session([DEMO / "auth-refactor.sr"], clock=RealClock(), db_url=db_url, workspace=tmp_path)
        app = make_app(session, open_engine=True)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: len(session.pending()) == 1, 60, "the other process's decision")
            (waiting_one,) = session.pending()
            run_id = waiting_one.escalation.run_id
            await wait_until(pilot, lambda: app.main.query_one(EventLog).run_id == run_id, 60, "the Events panel on its run")
            assert session.run(run_id) is None  # not this console's run
            def shown() -> str:
                return " ".join(" ".join(log_lines(app)).split())

            # Its events reach the database from the other process, a moment after its escalation's row.
            await wait_until(pilot, lambda: "? planner asks [architecture_decision]" in shown(), 60, "its recorded events")
            assert "→ planner: Fix login" in shown(), shown()
            await pilot.press("1")
            out, err = other.communicate(timeout=60)
            assert other.returncode == 0, err
            await app.action_quit()
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
