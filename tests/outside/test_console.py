"""A Claude Code session's request in the console (Pilot): it appears in the inbox of a console
open on the project's database, and one key answers it; the real Claude Code then runs the call.
A session waiting on its user (Claude Code's Notification hook) is told in the console."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from conftest import Project, escalate, finish, start_claude
from engine.kernel.clock import RealClock
from rules.loader import load_layered

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from helpers import SIZE, make_app, make_session, wait_until  # noqa: E402

from test_claude_code import ASK_TOUCH  # noqa: E402

from tests.hostile_text import HOSTILE, forbidden_in  # noqa: E402
from tests.tui.test_hostile_text import SHOWN, screen_text  # noqa: E402


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
            await pilot.press("1")  # [1] Approve: run Bash
            await wait_until(pilot, lambda: not session.pending(), 60, "the decision")
            result = await asyncio.to_thread(finish, claude)
        finally:
            if claude.poll() is None:
                claude.kill()
    assert (project.root / "marker").exists() and result["result"].startswith("RESULT:")
    [row] = project.rows()
    assert row["resolved_by"] == "human" and "console" in row["decision"]["decidedBy"]


def notification(project: Project, message: str, session: str = "s-notify") -> bytes:
    """Claude Code's Notification hook input (as 2.1.328 sends it: docs/outside.md)."""
    return json.dumps({"session_id": session, "transcript_path": str(project.home / "t.jsonl"), "cwd": str(project.root),
                       "hook_event_name": "Notification", "message": message, "title": "Claude Code",
                       "notification_type": "permission_prompt"}).encode()


async def test_a_claude_code_session_waiting_on_its_user_is_told_in_the_console(project: Project) -> None:
    session = make_session(workspace=project.root, clock=RealClock(), db_url=project.db_url)
    app = make_app(session, open_engine=True)
    told: list[tuple[str, str]] = []
    notify = app.notify

    def recorded(message: str, **kw) -> None:
        told.append((kw.get("title", ""), message))
        notify(message, **kw)

    app.notify = recorded  # type: ignore[method-assign]
    message = f"Claude needs your permission to use Bash {HOSTILE} [b]not markup[/b]"
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        hook = await asyncio.to_thread(escalate, "hook", "claude", "--db", project.db_url, cwd=project.root,
                                       stdin=notification(project, message))
        assert hook.returncode == 0 and hook.stdout == b"" and hook.stderr == b"", hook.stderr  # no opinion
        await wait_until(pilot, lambda: attention(told), 60, "the attention toast")
        await pilot.pause(0.2)
        [(title, said)] = attention(told)
        assert title == "claude needs attention [shop]"
        assert said.startswith("Claude needs your permission to use Bash") and "[b]not markup[/b]" in said
        shot = screen_text(app)
        assert forbidden_in(shot) == [] and SHOWN in shot  # shown as signs, never as a sequence
        assert "claude needs attention [shop]" in shot

        # News is a hint to look: naming the same run again, or a run that is not there, tells nothing.
        run_id = session.db.list_runs(include_finished=True)[0]["run_id"]
        for forged in (f"attention {run_id}", "attention nosuchrun", "attention " + "x" * 5000):
            session.db.signals.committed(forged)
        hook = await asyncio.to_thread(escalate, "hook", "claude", "--db", project.db_url, cwd=project.root,
                                       stdin=notification(project, "Claude is waiting for your input"))
        assert hook.returncode == 0 and hook.stdout == b"", hook.stderr
        await wait_until(pilot, lambda: len(attention(told)) == 2, 60, "the second attention toast")
        await pilot.pause(0.3)
        assert [said for _, said in attention(told)][1].startswith("Claude is waiting for your input")
        assert len(attention(told)) == 2
        await app.action_quit()
    # Recorded in the database, as an event of the session's run (the text as Claude Code sent it).
    from engine.services import open_database

    db = open_database(project.db_url, existing=True)
    try:
        [run] = [r for r in db.list_runs(include_finished=True) if r["workflow"] == "claude"]
        first, second = db.events_of(run["run_id"])
    finally:
        db.close()
    assert run["task"] == "shop" and first["type"] == second["type"] == "attention"
    assert first["message"] == message and first["notification_type"] == "permission_prompt"


def attention(told: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [t for t in told if "needs attention" in t[0]]


def test_an_attention_event_is_one_line_of_visible_text_in_the_events_panel() -> None:
    from tui.format import event_line

    line = event_line("attention", {"agent": "claude", "message": f"waiting {HOSTILE}\nsecond line [b]x[/b]"}).plain
    assert line.startswith("! claude needs attention: waiting ") and SHOWN in line and "[b]x[/b]" in line
    assert forbidden_in(line) == [] and "\n" not in line
