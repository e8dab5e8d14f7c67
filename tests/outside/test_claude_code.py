"""The real Claude Code CLI (2.1.328, from npm) in `-p` mode against a scripted Anthropic API: its
model calls Bash `touch marker`; the hook, installed by `escalate hook install claude --project`
as the README says, sends the call to a person; the command must not run while the escalation
waits; `escalate answer` (or a rule, or the deadline) decides; Claude's `result` and the files
tell what happened."""

from __future__ import annotations

import json

from conftest import Project, escalate, finish, start_claude

ASK_TOUCH = """escalationRules:
  global:
    - pattern: "touch"
      action: ask_user
      timeout: 600
"""


def _raised(project: Project, claude) -> dict:
    [row] = project.wait_pending()
    assert not (project.root / "marker").exists(), "the command ran while its escalation waited"
    assert claude.poll() is None
    payload = row["payload"]
    assert payload["escalation"]["question"] == "Allow claude to call the tool Bash?"
    assert payload["escalation"]["task_id"] == "shop"  # the project folder's name
    assert "touch marker" in payload["escalation"]["context"]
    assert [o["id"] for o in payload["escalation"]["options"]] == ["approve", "deny"]
    return row


def test_approved_from_the_shell_the_command_runs(project: Project, model) -> None:
    project.rules(ASK_TOUCH)
    project.install()
    claude = start_claude(project, model)
    row = _raised(project, claude)
    listed = escalate("runs", "--db", project.db_url, "--format", "json", cwd=project.root)
    [run] = json.loads(listed.stdout)
    assert run["workflow"] == "claude" and run["status"] == "waiting" and run["pending"][0]["id"] == row["id"]
    assert project.answer(row["id"], "--approve").returncode == 0
    result = finish(claude)
    assert (project.root / "marker").exists()
    assert result["result"].startswith("RESULT:") and "denied" not in result["result"]
    assert project.wait_status(row["id"], "decided")["resolved_by"] == "human"


def test_denied_with_instructions_the_model_reads_them(project: Project, model) -> None:
    project.rules(ASK_TOUCH)
    project.install()
    claude = start_claude(project, model)
    row = _raised(project, claude)
    assert project.answer(row["id"], "--deny", "--instructions", "use the build folder instead").returncode == 0
    result = finish(claude)
    assert not (project.root / "marker").exists()
    assert "denied by a human" in result["result"] and "use the build folder instead" in result["result"]
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]


def test_approved_with_edited_arguments_the_edited_command_runs(project: Project, model) -> None:
    project.rules(ASK_TOUCH)
    project.install()
    claude = start_claude(project, model)
    row = _raised(project, claude)
    edited = json.dumps({"command": "touch edited", "description": "edited by a person"})
    assert project.answer(row["id"], "--approve", "--args", edited).returncode == 0
    finish(claude)
    assert (project.root / "edited").exists() and not (project.root / "marker").exists()


def test_a_rule_that_allows_decides_without_a_person(project: Project, model) -> None:
    project.rules("""escalationRules:
  global:
    - pattern: "touch marker"
      action: allow
""")
    project.install()
    result = finish(start_claude(project, model))
    assert (project.root / "marker").exists() and result["result"].startswith("RESULT:")
    assert project.rows() == []  # decided by the rule: nothing raised, no database needed


def test_a_rule_that_denies_names_itself_to_the_model(project: Project, model) -> None:
    project.rules("""escalationRules:
  global:
    - pattern: "touch"
      action: deny
""")
    project.install()
    result = finish(start_claude(project, model))
    assert not (project.root / "marker").exists()
    assert "denied by rule 'touch' (deny" in result["result"]


def test_nobody_answers_the_default_denies_as_timeout_default(project: Project, model) -> None:
    project.rules(ASK_TOUCH.replace("timeout: 600", "timeout: 2"))
    project.install()
    claude = start_claude(project, model)
    result = finish(claude)
    assert not (project.root / "marker").exists()
    assert "denied by the timeout default" in result["result"] and "Nobody answered within 2 s" in result["result"]
    [row] = project.rows()
    assert row["status"] == "decided" and row["resolved_by"] == "timeout_default"


def test_no_rule_claude_s_own_permission_request_comes_here(project: Project, model) -> None:
    """No rule: PreToolUse has no opinion; Claude Code's own permission check then asks
    (PermissionRequest, which 2.1.328 fires in -p too), and that question waits here."""
    project.install()  # shipped rules: nothing about `touch`
    claude = start_claude(project, model)
    row = _raised(project, claude)
    assert row["deadline"] is None  # a tool approval without a rule's timeout waits for a person
    assert project.answer(row["id"], "--approve").returncode == 0
    finish(claude)
    assert (project.root / "marker").exists()


def test_claude_killed_its_waiting_request_is_withdrawn(project: Project, model) -> None:
    project.rules(ASK_TOUCH)
    project.install()
    claude = start_claude(project, model)
    row = _raised(project, claude)
    claude.kill()  # SIGKILL: the hook sees its parent gone
    claude.wait()
    assert project.wait_status(row["id"], "withdrawn")["decision"] is None
    refused = project.answer(row["id"], "--approve")
    assert refused.returncode == 1 and b"already decided by nobody (it was withdrawn)" in refused.stderr
    assert not (project.root / "marker").exists()
