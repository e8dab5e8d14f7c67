"""A real ACP agent we did not write, offline: Claude Code through `@zed-industries/claude-code-acp`
(npm, 0.16.2: its `@anthropic-ai/claude-agent-sdk` bundles Claude Code's cli.js), against the
suite's scripted Anthropic API on 127.0.0.1 (tests/outside/anthropic_server.py). The model asks
for the adapter's Bash tool; the adapter asks escalate's permission over ACP; the person answers
from the shell (`escalate answer --approve`) or from the console (the pane's key, Pilot, the run
started from the start-run screen); the command then runs through escalate's terminal
capability, in the workspace.

The package is pinned in tests/acp/package.json and installed by .ci/run (`npm ci --prefix
tests/acp`), else here by tests/npm_packages.py (never a skip). CLAUDE_CODE_ACP may name another
install. As root, the agent runs as another user (Claude Code refuses root with its permission
modes).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest
from textual.widgets import Input

from rules import default_rules
from tests.acp.test_acp_cli import _pending
from tests.npm_packages import installed
from tests.outside.anthropic_server import ScriptedModel
from tests.tui.helpers import SIZE, settle, wait_until
from tests.tui.test_pane import pane_text
from tests.unprivileged import as_other_user
from tui.app import EscalateApp
from tui.screens.start_run import StartRunScreen
from tui.session import ConsoleSession
from tui.widgets.decision_pane import DecisionPane

COMMAND = "echo escalated > approved.txt"
WAIT = 240.0  # seconds the agent may take on a loaded machine (never an assertion on time)


def _agent() -> str:
    return os.environ.get("CLAUDE_CODE_ACP") or str(installed(Path(__file__).parent, "claude-code-acp"))


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    scripted = ScriptedModel("mcp__acp__Bash", {"command": COMMAND, "description": "Write the approval marker",
                                                "timeout": 60000}).start()
    yield scripted
    scripted.stop()


@pytest.fixture
def folders() -> Iterator[tuple[Path, Path]]:
    """(the agent's HOME, the workspace), under /tmp: the agent's user can reach them."""
    tmp_path = Path(tempfile.mkdtemp(prefix="escalate-claude-acp-"))
    os.chmod(tmp_path, 0o755)
    home, workspace = tmp_path / "home", tmp_path / "ws"
    for folder in (home, workspace):
        folder.mkdir()
        os.chmod(folder, 0o777)  # the agent's user writes here
    yield home, workspace
    shutil.rmtree(tmp_path, ignore_errors=True)


def _command(model: ScriptedModel, home: Path) -> str:
    """The agent's command: its environment given with `env` (the console starts it as typed)."""
    env = [f"HOME={home}", f"ANTHROPIC_BASE_URL={model.url}", "ANTHROPIC_API_KEY=sk-offline", "DISABLE_TELEMETRY=1",
           "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_ERROR_REPORTING=1"]
    prefix = as_other_user() if os.geteuid() == 0 else []
    return shlex.join(["env", *env, *prefix, _agent()])


def _ran_it(model: ScriptedModel, workspace: Path) -> None:
    assert (workspace / "approved.txt").read_text() == "escalated\n"
    # escalate's terminal ran it (the agent's user is another one when the suite runs as root)
    assert (workspace / "approved.txt").stat().st_uid == os.geteuid()
    assert any("Exited with code 0" in result for result in model.tool_results()), model.tool_results()


def test_claude_code_asks_through_acp_and_the_shell_answers(model: ScriptedModel, folders: tuple[Path, Path]) -> None:
    home, workspace = folders
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    db = f"sqlite:///{workspace.parent / 'e.db'}"
    run = subprocess.Popen([sys.executable, "-m", "engine", "run", "--agent", _command(model, home), "--input",
                            "write the marker", "--wait", "--db", db, "--task", "claude"], cwd=workspace, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1)
        if run.poll() is not None:
            raise AssertionError(run.communicate()[1])
        pending = _pending(workspace.parent, db)
        assert COMMAND in pending["question"]
        answered = subprocess.run([sys.executable, "-m", "engine", "answer", pending["id"], "--approve", "--db", db],
                                  env=env, capture_output=True, text=True, timeout=120)
        assert answered.returncode == 0, answered.stderr
        out, err = run.communicate(timeout=WAIT)
    finally:
        run.kill()
    assert run.returncode == 0, err
    assert "Exited with code 0" in out  # the model's last words quote the tool's result
    _ran_it(model, workspace)


async def test_claude_code_asks_through_acp_and_the_console_answers(model: ScriptedModel,
                                                                    folders: tuple[Path, Path]) -> None:
    home, workspace = folders
    session = ConsoleSession([], rules=default_rules(), workspace=workspace)
    app = EscalateApp(session)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 120, "the engine")
        await pilot.press("s")  # no workflow: the start-run screen asks for an agent
        await wait_until(pilot, lambda: isinstance(app.screen, StartRunScreen), 60, "the start dialog")
        screen = app.screen
        await settle(pilot)
        screen.query_one("#start-agent", Input).value = _command(model, home)
        screen.query_one("#start-input", Input).value = "write the marker"
        screen.query_one("#start-input", Input).focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: session.runs, 60, "the run")
        handle = session.runs[0]
        pane = app.main.query_one(DecisionPane)
        await wait_until(pilot, lambda: (pane.visible and pane.pending is not None) or handle.finished_at is not None,
                         WAIT, "the agent's permission request in the pane")
        assert handle.finished_at is None, handle.error
        text = pane_text(app)
        assert COMMAND in text
        choices = [line for line in text.splitlines() if line.startswith("[")]
        allow = next(line for line in choices if line.endswith("] Allow"))  # the adapter's `allow` (allow_once)
        await pilot.press(allow[1])
        await asyncio.wait_for(handle.wait(), WAIT)
    assert handle.error is None, handle.error
    assert "Exited with code 0" in str(handle.result)
    _ran_it(model, workspace)
