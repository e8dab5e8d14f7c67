"""An ACP agent run from the console: its permission request in the pane with the agent's own
options, answered with a key (Pilot); its streamed work in the run's log as text."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from engine.runtime.acp.workflow import agent_source
from tests.acp.conftest import agent_command
from tests.tui.helpers import SIZE, settle
from tests.acp.test_acp_agent import OPTIONS
from tui.app import EscalateApp
from tui.session import ConsoleSession, RunRequest, WorkflowEntry
from tui.widgets.decision_pane import DecisionPane
from tests.tui.test_pane import pane_text
from rules import default_rules


async def test_the_pane_shows_the_agents_options_and_a_key_answers(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"trace": str(trace), "turns": [[
        {"say": "Checking [b]the[/b] release\n"},
        {"permission": {"title": "npm publish [prod]", "kind": "execute", "raw_input": {"command": "npm publish"},
                        "options": OPTIONS}},
    ]]}))
    source = tmp_path / "coder.sr"
    source.write_text(agent_source(agent_command(script)))
    session = ConsoleSession([WorkflowEntry(source)], rules=default_rules(), workspace=tmp_path)
    app = EscalateApp(session)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(600):
            if app.engine_ready.is_set():
                break
            await asyncio.sleep(0.05)
        handle = app.start(session.workflows[0], RunRequest(None, "ship it"))
        pane = app.main.query_one(DecisionPane)
        for _ in range(1200):
            await pilot.pause()
            if pane.visible and pane.pending is not None:
                break
            await asyncio.sleep(0.05)
        text = pane_text(app)
        assert "npm publish [prod]" in text  # the title as text, not markup
        assert [line for line in text.splitlines() if line.startswith("[")][:4] == [
            "[1] Allow once", "[2] Always allow", "[3] Reject", "[4] Never"]
        assert "Let agent decide" not in text and "Custom response" not in text  # a tool approval
        await pilot.press("1")
        assert await asyncio.wait_for(handle.wait(), 120) is not None
        await settle(pilot)
    outcome = [json.loads(line) for line in trace.read_text().splitlines() if '"permission"' in line]
    assert outcome[0]["outcome"] == "allow-1"
    assert handle.result.strip().endswith("outcome: allow-1")
    assert any(e.type == "log" and e.fields.get("message") == "main: Checking [b]the[/b] release" for e in handle.events)
