"""The real Claude Code CLI (2.1.328, from npm) with `escalate mcp` added as the README says
(`claude mcp add escalate -- escalate mcp`), in `-p` mode against a scripted Anthropic API whose
model calls `escalate_to_human`: the question waits in the database until `escalate answer`
decides it, and the model reads the decision as the tool's result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CLAUDE, WAIT, Project, claude_env, escalate, finish
from anthropic_server import ScriptedModel
from tests.npm_packages import installed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOOL = "mcp__escalate__escalate_to_human"  # Claude Code's name for an MCP server's tool
ASK = {"reason": "architecture_decision", "question": "Use JWT instead of sessions?",
       "context": "Touches src/api/auth.ts", "requestId": "claude-1",
       "options": [{"id": "opt1", "label": "Yes, use JWT", "recommended": True}, {"id": "opt2", "label": "No"}]}


@pytest.fixture
def asking_model():  # noqa: ANN201
    scripted = ScriptedModel(tool=TOOL, tool_input=ASK).start()
    yield scripted
    scripted.stop()


def env_for(project: Project, model: ScriptedModel) -> dict[str, str]:
    env = claude_env(project, model)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # `escalate` as installed
    # The scripted model calls the tool in its first turn: Claude Code must have connected the
    # server by then (by default `-p` does not wait) and list the tool itself (not behind ToolSearch).
    wait_ms = str(int(WAIT * 1000))  # the server's start, on a loaded machine
    env.update(MCP_CONNECTION_NONBLOCKING="false", ENABLE_TOOL_SEARCH="false", MCP_TIMEOUT=wait_ms,
               CLAUDE_CODE_MCP_STARTUP_WAIT_MS=wait_ms)
    return env


def _asked(project: Project, claude: subprocess.Popen[bytes]) -> list[dict]:
    """The pending escalation, once raised; Claude ending first fails with what it said."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        pending = [r for r in project.rows() if r["status"] == "pending"]
        if pending:
            return pending
        if claude.poll() is not None:
            out, err = claude.communicate()
            raise AssertionError(f"Claude ended without asking: {out.decode()[-1500:]} {err.decode()[-1500:]}")
        time.sleep(0.2)
    raise AssertionError(f"nothing was asked within {WAIT:g} s")


def test_claude_code_asks_through_escalate_mcp_and_reads_the_decision(project: Project, asking_model) -> None:
    installed(CLAUDE.parents[2], "claude")
    env = env_for(project, asking_model)
    added = subprocess.run([str(CLAUDE), "mcp", "add", "escalate", "--", "escalate", "mcp"], cwd=project.root, env=env,
                           capture_output=True, text=True, timeout=WAIT)
    assert added.returncode == 0, added.stderr
    claude = subprocess.Popen([str(CLAUDE), "-p", "ask my person", "--output-format", "json", "--allowedTools", TOOL],
                              cwd=project.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        [row] = _asked(project, claude)
        asked = row["payload"]["escalation"]
        assert (asked["question"], asked["task_id"], asked["reason"]) == (ASK["question"], "shop", "architecture_decision")
        assert claude.poll() is None  # Claude waits on the tool call
        listed = escalate("runs", "--db", project.db_url, "--format", "json", cwd=project.root)
        [run] = json.loads(listed.stdout)
        assert run["workflow"] == "mcp" and run["pending"][0]["id"] == row["id"]
        assert project.answer(row["id"], "--option", "opt2", "--instructions", "keep sessions a release").returncode == 0
        result = finish(claude)
    finally:
        if claude.poll() is None:
            claude.kill()
    answer = json.loads(result["result"].removeprefix("RESULT: "))
    assert (answer["selectedOption"], answer["additionalInstructions"], answer["resolvedBy"]) == (
        "opt2", "keep sessions a release", "human")
    assert answer["escalationId"] == row["id"]
