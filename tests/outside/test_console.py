"""A Claude Code session's request in the console (Pilot): it appears in the inbox of a console
open on the project's database, and one key answers it; the real Claude Code then runs the call."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from conftest import Project, finish, start_claude
from engine.kernel.clock import RealClock
from rules.loader import load_layered

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from helpers import SIZE, make_app, make_session, wait_until  # noqa: E402

from test_claude_code import ASK_TOUCH  # noqa: E402


async def test_a_claude_code_request_is_answered_in_the_console_with_one_key(project: Project, model) -> None:
    project.rules(ASK_TOUCH)
    project.install()
    session = make_session(rules=load_layered(None, workspace=project.root), workspace=project.root,
                           clock=RealClock(), db_url=project.db_url)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        claude = start_claude(project, model)
        try:
            await wait_until(pilot, lambda: session.pending(), 120, "Claude Code's request in the inbox")
            [asked] = session.pending()
            assert asked.escalation.agent == "claude" and asked.escalation.task_id == "shop"
            assert asked.extra["tool"] == "Bash" and asked.extra["args"]["command"] == "touch marker"
            assert not (project.root / "marker").exists()
            await pilot.pause(0.3)
            if os.environ.get("ESCALATE_SCREENSHOTS"):  # README's picture: ESCALATE_SCREENSHOTS=screenshots
                app.save_screenshot("claude-code-request.svg", os.environ["ESCALATE_SCREENSHOTS"])
            await pilot.press("1")  # [1] Approve: run Bash
            await wait_until(pilot, lambda: not session.pending(), 30, "the decision")
            result = await asyncio.to_thread(finish, claude)
        finally:
            if claude.poll() is None:
                claude.kill()
    assert (project.root / "marker").exists() and result["result"].startswith("RESULT:")
    [row] = project.rows()
    assert row["resolved_by"] == "human" and "console" in row["decision"]["decidedBy"]
