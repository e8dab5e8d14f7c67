"""The console's start-run screen runs an ACP agent (issue 25: `run --agent` "and the console's
start-run screen"): its command and workspace typed in the dialog, checked there (one line, the
dialog stays), then the same one-agent workflow as `run --agent` (engine/runtime/acp/workflow.py)
runs in that workspace; its permission request is answered with a key (Pilot)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual.widgets import Input, Select

from engine.demo import demo_workflows
from rules import default_rules
from tests.acp.conftest import agent_command
from tests.acp.test_acp_agent import OPTIONS
from tests.tui.helpers import SIZE, make_app, make_session, settle, wait_until
from tests.tui.test_pane import pane_text
from tui.app import EscalateApp
from tui.screens.start_run import AGENT, StartRunScreen
from tui.session import ConsoleSession
from tui.widgets.decision_pane import DecisionPane


def _script(tmp_path: Path) -> tuple[Path, Path]:
    trace, script = tmp_path / "trace.jsonl", tmp_path / "script.json"
    script.write_text(json.dumps({"trace": str(trace), "turns": [[
        {"read": "notes.txt"},
        {"permission": {"title": "npm publish", "kind": "execute", "raw_input": {"command": "npm publish"},
                        "options": OPTIONS}},
    ]]}))
    return script, trace


def _error(screen: StartRunScreen) -> str:
    shown = screen.query_one("#start-error")
    return str(shown.render()) if shown.display else ""


async def _fill(pilot, screen: StartRunScreen, command: str, workspace: str) -> str:
    """Type the command and workspace, Enter on the command: the error line shown (or "")."""
    screen.query_one("#start-agent", Input).value = command
    screen.query_one("#start-workspace", Input).value = workspace
    screen.query_one("#start-agent", Input).focus()
    await pilot.press("enter")
    await settle(pilot)
    return _error(screen) if screen.is_attached else ""  # started: the dialog has gone


async def test_with_no_workflow_s_asks_for_an_agent_checks_it_and_runs_it_in_its_workspace(tmp_path: Path) -> None:
    console_folder, agent_folder = tmp_path / "console", tmp_path / "agent-ws"
    console_folder.mkdir()
    agent_folder.mkdir()
    (agent_folder / "notes.txt").write_text("the agent's own folder")
    script, trace = _script(tmp_path)
    session = ConsoleSession([], rules=default_rules(), workspace=console_folder)
    app = EscalateApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 120, "the engine")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), 60, "the start dialog")
        screen = app.screen
        await settle(pilot)
        assert screen.focused is screen.query_one("#start-agent")  # no workflow: typing goes to the command
        assert screen.query_one("#start-workspace", Input).value == str(console_folder)  # the console's, by default
        good, ws = agent_command(script), str(agent_folder)
        for command, workspace, said in [
            ("   ", ws, "Cannot start: the ACP command is empty"),
            ("gemini 'unclosed", ws, "Cannot start: the ACP command cannot be split into words (no closing quotation)"),
            ("no-such-acp-agent-xyz --acp", ws, "Cannot start: not installed ('no-such-acp-agent-xyz' is not on PATH)"),
            ("./agent.sh", ws, f"Cannot start: not installed ('./agent.sh' is not an executable file in {agent_folder})"),
            (good, str(tmp_path / "missing"), f"Cannot start: workspace {tmp_path / 'missing'}: not a directory"),
        ]:
            assert await _fill(pilot, screen, command, workspace) == said
            assert app.screen is screen and not session.runs  # the dialog stays; nothing started
        assert not (agent_folder / ".escalate").exists()  # nothing written for a command that cannot run
        screen.query_one("#start-agent", Input).value = good
        screen.query_one("#start-workspace", Input).value = ws
        screen.query_one("#start-input", Input).focus()
        await pilot.press(*"ship", "enter")
        await wait_until(pilot, lambda: session.runs, 60, "the run")
        handle = session.runs[0]
        pane = app.main.query_one(DecisionPane)
        await wait_until(pilot, lambda: pane.visible and pane.pending is not None, 120, "the permission in the pane")
        text = pane_text(app)
        assert "npm publish" in text
        assert [line for line in text.splitlines() if line.startswith("[")][:4] == [
            "[1] Allow once", "[2] Always allow", "[3] Reject", "[4] Never"]
        await pilot.press("3")  # reject
        await asyncio.wait_for(handle.wait(), 120)  # its agent ended too
    seen = [json.loads(line) for line in trace.read_text().splitlines()]
    assert next(t for t in seen if t["event"] == "new_session")["cwd"] == str(agent_folder.resolve())
    assert next(t for t in seen if t["event"] == "read")["result"] == "the agent's own folder"
    assert next(t for t in seen if t["event"] == "prompt")["text"].endswith("ship")
    assert [t["outcome"] for t in seen if t["event"] == "permission"] == ["no-1"]
    assert handle.result.strip().endswith("outcome: no-1")
    assert handle.task == Path(agent_command(script).split()[0]).name.replace(".", "-")  # as `run --agent` names it
    assert list((agent_folder / ".escalate" / "acp").glob("*.sr"))  # the workflow `run --agent` writes


async def test_a_workflows_dialog_switches_to_an_agent_and_back(tmp_path: Path) -> None:
    script, trace = _script(tmp_path)
    (tmp_path / "notes.txt").write_text("console folder")
    session = make_session(demo_workflows(), rules=default_rules(), workspace=tmp_path)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 120, "the engine")
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), 60, "the start dialog")
        screen = app.screen
        await settle(pilot)
        fields = screen.query_one("#start-agent-fields")
        assert not fields.display and screen.focused is screen.query_one("#start-input")
        screen.query_one("#start-flow", Select).value = AGENT
        await settle(pilot)
        assert fields.display and screen.focused is screen.query_one("#start-agent")
        assert str(screen.query_one("#start-dialog").border_title) == "Start an ACP agent"
        screen.query_one("#start-flow", Select).value = ""
        await settle(pilot)
        assert not fields.display  # back to the workflow: Enter starts it, not an agent
        screen.query_one("#start-flow", Select).value = AGENT
        await settle(pilot)
        assert await _fill(pilot, screen, agent_command(script), "") == ""  # empty workspace: the console's
        await wait_until(pilot, lambda: session.runs, 60, "the run")
        handle = session.runs[0]
        await wait_until(pilot, lambda: session.pending(), 120, "the permission")
        await pilot.press("1")
        await asyncio.wait_for(handle.wait(), 120)  # its agent ended too
    assert handle.error is None and handle.result.strip().endswith("outcome: allow-1")
    assert handle.workflow != session.workflows[0].name
    assert any(json.loads(line).get("result") == "console folder" for line in trace.read_text().splitlines())


def test_snapshot_of_the_agent_dialog_with_its_error_line(snap_compare) -> None:
    session = make_session()  # no workflow (a listed one's description is read on a thread: not frozen)
    app = make_app(session)

    async def before(pilot) -> None:
        app.push_screen(StartRunScreen(None, Path("/tmp")))
        await settle(pilot)
        for field in app.screen.query(Input):  # a loaded host took the picture after a blink: cursor hidden
            field.cursor_blink = False  # shown again, for good, by the focus and the key below
        await _fill(pilot, app.screen, "no-such-acp-agent-xyz --acp", "/tmp")

    assert snap_compare(app, terminal_size=(110, 36), run_before=before)
