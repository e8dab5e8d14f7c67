"""`escalate hook codex` fed the JSON Codex's hook documentation gives (PreToolUse and
PermissionRequest for its shell tool, `tool_name: Bash`; the real Codex CLI sends the same:
test_codex_cli.py, which also drives its PermissionRequest through `codex app-server`).
Codex fails closed on `updatedInput` and its PreToolUse is answered with a denial or nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from conftest import Project, escalate, project_env
from test_hook import ASK, outputs

COMMAND = {"command": "touch marker", "description": "make the marker"}


def codex_call(project: Project, event: str, tool_input: dict | None = None) -> bytes:
    data = {"session_id": "019a-codex", "turn_id": "turn-1", "transcript_path": str(project.home / "t.jsonl"),
            "cwd": str(project.root), "hook_event_name": event, "model": "gpt-5", "permission_mode": "default",
            "tool_name": "Bash", "tool_input": tool_input or COMMAND}
    if event == "PreToolUse":
        data["tool_use_id"] = "call_1"
    return json.dumps(data).encode()


def start(project: Project, event: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "engine", "hook", "codex"], cwd=project.root, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=project_env())
    assert proc.stdin is not None
    proc.stdin.write(codex_call(project, event))
    proc.stdin.close()
    return proc


def test_a_rule_that_denies_answers_pre_tool_use(project: Project) -> None:
    project.rules(ASK.replace("ask_user", "deny"))
    done = escalate("hook", "codex", cwd=project.root, stdin=codex_call(project, "PreToolUse"))
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "denied by rule 'touch'" in out["permissionDecisionReason"]


def test_approved_at_pre_tool_use_its_permission_request_gets_the_same_decision(project: Project) -> None:
    project.rules(ASK)
    pre = start(project, "PreToolUse")
    [row] = project.wait_pending()
    assert project.answer(row["id"], "--approve").returncode == 0
    out, err = outputs(pre)
    assert pre.returncode == 0 and out == b"", err  # nothing: Codex's own approval comes next
    done = escalate("hook", "codex", cwd=project.root, stdin=codex_call(project, "PermissionRequest"))
    assert json.loads(done.stdout)["hookSpecificOutput"] == {"hookEventName": "PermissionRequest",
                                                             "decision": {"behavior": "allow"}}
    assert len(project.rows()) == 1  # asked once


def test_edited_arguments_are_refused_saying_why(project: Project) -> None:
    project.rules(ASK)
    pre = start(project, "PermissionRequest")
    [row] = project.wait_pending()
    edited = json.dumps({"command": "touch edited"})
    assert project.answer(row["id"], "--approve", "--args", edited).returncode == 0
    out, _ = outputs(pre)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "updatedInput" not in decision
    assert "edited arguments, which this agent cannot take" in decision["message"] and "touch edited" in decision["message"]


def test_denied_with_instructions(project: Project) -> None:
    project.rules(ASK)
    pre = start(project, "PreToolUse")
    [row] = project.wait_pending()
    assert project.answer(row["id"], "--deny", "--instructions", "not in CI").returncode == 0
    out, _ = outputs(pre)
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "denied by a human" in reason and "not in CI" in reason


def test_stopped_its_request_is_withdrawn(project: Project) -> None:
    project.rules(ASK)
    pre = start(project, "PermissionRequest")
    [row] = project.wait_pending()
    pre.send_signal(signal.SIGTERM)
    outputs(pre)
    assert project.wait_status(row["id"], "withdrawn")
