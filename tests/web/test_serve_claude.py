"""A Claude Code session's request through `escalate serve`, in a real headless Chromium: the
hook process (fed Claude Code's PreToolUse JSON for Bash, with rules that ask) raises it, the
page's inbox shows it, one key answers it, and the hook prints the allow Claude Code reads."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright

from engine.durable.database import Database
from tests.web.browser import VIEWPORT, Terminal, launch
from tests.web.serving import auth_refactor, serve

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]  # a console per tab, on a shared 2-core host

ASK_TOUCH = """escalationRules:
  global:
    - pattern: "touch"
      action: ask_user
      timeout: 600
"""


@pytest.fixture
def context() -> Iterator[Any]:
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        try:
            ctx = chromium.new_context(viewport=VIEWPORT)
            yield ctx
            ctx.close()
        finally:
            chromium.close()


def pre_tool_use(project: Path, command: str) -> bytes:
    """Claude Code's PreToolUse input for Bash (2.1.328's fields: docs/outside.md)."""
    return json.dumps({"session_id": "s-browser", "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
                       "prompt_id": "p", "permission_mode": "default", "hook_event_name": "PreToolUse",
                       "tool_name": "Bash", "tool_input": {"command": command, "description": "make the marker"},
                       "tool_use_id": "toolu_browser"}).encode()


def pending(url: str) -> list[dict]:
    db = Database(url)
    try:
        return db.pending_escalations()
    finally:
        db.close()


def test_a_claude_code_request_is_answered_in_the_browser_with_one_key_and_the_hook_allows(tmp_path: Path, context) -> None:
    project = tmp_path / "shop"
    (project / ".escalate").mkdir(parents=True)
    (project / ".escalate" / "rules.yaml").write_text(ASK_TOUCH)
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    (tmp_path / "call.json").write_bytes(pre_tool_use(project, "touch marker"))
    with open(tmp_path / "call.json", "rb") as stdin:
        hook = subprocess.Popen([sys.executable, "-m", "engine", "hook", "claude", "--db", url], cwd=project,
                                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    served = None
    try:
        served = serve(tmp_path, *auth_refactor("--db", url))
        page = context.new_page()
        terminal = Terminal(page)
        page.goto(served.link)
        terminal.wait_for("DECISION REQUIRED [shop]", "Inbox (1)", "touch marker", "[1] Approve")
        assert hook.poll() is None  # the hook waits for the decision
        [row] = pending(url)
        assert row["payload"]["escalation"]["agent"] == "claude"
        terminal.press("1")  # [1] Approve: run Bash
        out, err = hook.communicate(timeout=60)
        assert hook.returncode == 0, err
        answer = json.loads(out)["hookSpecificOutput"]
        assert answer["hookEventName"] == "PreToolUse" and answer["permissionDecision"] == "allow"
        terminal.wait_for("Inbox (0)")
        db = Database(url)
        try:
            [decided] = db.escalations_of(row["run_id"])
        finally:
            db.close()
        assert (decided["status"], decided["resolved_by"]) == ("decided", "human")
        assert decided["decision"]["selectedOption"] == "approve" and "console" in decided["decision"]["decidedBy"]
    finally:
        hook.kill()
        if served is not None:
            code, err = served.stop()
            assert code == 0, err
