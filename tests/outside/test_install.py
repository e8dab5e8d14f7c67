"""`escalate hook install|uninstall claude|codex`: the agent's settings keep everything else and
its order, installing twice changes nothing, uninstall removes exactly what install added, and a
file that cannot be changed is left as it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Project, escalate, project_env

THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "./lint.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
    },
    "env": {"FOO": "1"},
}


def settings(project: Project, name: str = ".claude/settings.json") -> Path:
    path = project.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(THEIRS, indent=4))
    return path


def test_install_keeps_the_rest_and_its_order_and_says_what_changed(project: Project) -> None:
    path = settings(project)
    done = escalate("hook", "install", "claude", "--project", str(project.root), cwd=project.root)
    assert done.returncode == 0, done.stderr
    data = json.loads(path.read_text())
    assert list(data) == list(THEIRS)
    assert data["model"] == "opus" and data["permissions"] == THEIRS["permissions"] and data["env"] == THEIRS["env"]
    assert list(data["hooks"]) == ["PreToolUse", "Stop", "PermissionRequest", "Notification"]
    assert data["hooks"]["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0]  # theirs first, untouched
    mine = data["hooks"]["PreToolUse"][1]["hooks"][0]
    assert mine["command"] == f"{sys.executable} -P -m engine hook claude" and mine["type"] == "command"
    said = done.stdout.decode()
    assert "added PreToolUse hook" in said and "added PermissionRequest hook" in said and "added Notification hook" in said
    # The shipped rules let a tool approval wait for a person: the timeout says so.
    assert mine["timeout"] == 3600 and "without a deadline" in said


def test_the_installed_command_never_imports_the_projects_own_engine_package(project: Project) -> None:
    """The agent runs the hook in the project's folder: a project (a cloned repository) with an
    `engine/` package must not run in its place, at every tool call."""
    path = settings(project)
    project.rules('escalationRules:\n  global:\n    - {pattern: "rm -rf", action: deny}\n')
    escalate("hook", "install", "claude", "--project", str(project.root), cwd=project.root)
    (project.root / "engine").mkdir()
    (project.root / "engine" / "__init__.py").write_text("open('pwned', 'w').close()\n")
    (project.root / "engine" / "__main__.py").write_text("")
    command = json.loads(path.read_text())["hooks"]["PreToolUse"][1]["hooks"][0]["command"]
    stdin = json.dumps({"session_id": "s", "cwd": str(project.root), "hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_input": {"command": "rm -rf /"}, "tool_use_id": "t"}).encode()
    done = subprocess.run(["sh", "-c", command], cwd=project.root, input=stdin, capture_output=True, env=project_env(),
                          timeout=120)
    assert not (project.root / "pwned").exists()
    assert done.returncode == 0 and b'"permissionDecision"' in done.stdout, done.stderr


def test_installing_twice_changes_nothing(project: Project) -> None:
    path = settings(project)
    escalate("hook", "install", "claude", "--project", str(project.root), cwd=project.root)
    before = path.read_bytes()
    again = escalate("hook", "install", "claude", "--project", str(project.root), cwd=project.root)
    assert again.returncode == 0 and b"nothing changed" in again.stdout
    assert path.read_bytes() == before


def test_the_timeout_is_above_the_longest_deadline_the_rules_allow(project: Project) -> None:
    project.rules("""escalationRules:
  global:
    - {pattern: "touch", action: ask_user, timeout: 90}
  defaults:
    security_concern: {timeout: 120, onTimeout: stop}
""")
    done = escalate("hook", "install", "codex", "--project", str(project.root), cwd=project.root)
    assert done.returncode == 0, done.stderr
    data = json.loads((project.root / ".codex" / "hooks.json").read_text())
    assert list(data["hooks"]) == ["PreToolUse", "PermissionRequest"]  # Codex has no Notification event
    assert data["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"] == 150
    assert "above the longest deadline your rules give a tool approval (120 s)" in done.stdout.decode()


def test_uninstall_removes_exactly_what_install_added(project: Project) -> None:
    path = settings(project)
    escalate("hook", "install", "claude", "--project", str(project.root), cwd=project.root)
    done = escalate("hook", "uninstall", "claude", "--project", str(project.root), cwd=project.root)
    assert done.returncode == 0 and done.stdout.count(b"removed") == 3
    assert json.loads(path.read_text()) == THEIRS
    assert list(json.loads(path.read_text())) == list(THEIRS)


def test_user_settings_are_the_home_folder_s(project: Project) -> None:
    env = {**project_env(), "HOME": str(project.home)}
    done = escalate("hook", "install", "claude", "--user", cwd=project.root, env=env)
    assert done.returncode == 0
    assert "PreToolUse" in json.loads((project.home / ".claude" / "settings.json").read_text())["hooks"]


def test_a_file_that_is_not_json_is_left_as_it_was(project: Project) -> None:
    path = project.root / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "opus",\n  oops}')
    done = escalate("hook", "install", "claude", "--project", str(project.root), cwd=project.root)
    assert done.returncode == 1 and done.stderr.count(b"\n") == 1 and b"settings.json:2:" in done.stderr
    assert path.read_text() == '{"model": "opus",\n  oops}'


def test_usage_errors_exit_2(project: Project) -> None:
    both = escalate("hook", "install", "claude", "--project", ".", "--user", cwd=project.root)
    assert both.returncode == 2
    nowhere = escalate("hook", "install", "claude", "--project", str(project.root / "nope"), cwd=project.root)
    assert nowhere.returncode == 2 and b"no such folder" in nowhere.stderr


# -- what Codex needs before it runs them (engine/outside/codex_setup.py) ---------------------------


def codex_install(project: Project, config: str | None = None) -> str:
    home = project.home / ".codex"
    home.mkdir(exist_ok=True)
    if config is not None:
        (home / "config.toml").write_text(config)
    done = escalate("hook", "install", "codex", "--project", str(project.root), cwd=project.root,
                    env={**project_env(), "CODEX_HOME": str(home)})
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    return done.stdout.decode()


def test_install_codex_says_how_to_trust_the_project_and_review_the_hooks(project: Project) -> None:
    said = codex_install(project)
    config = project.home / ".codex" / "config.toml"
    assert "hooks need no feature flag" in said
    assert f'trust the project: Codex reads {project.root / ".codex" / "hooks.json"} only in a trusted project' in said
    assert f'{config}: [projects.{json.dumps(str(project.root))}] trust_level = "trusted"' in said
    assert "`codex exec --trust`" in said
    assert 'review the hooks: Codex runs a new or changed hook only once you have trusted it' in said
    assert '"Trust all and continue"' in said and not config.exists()  # told, never written: trusting is the person's
    again = codex_install(project)
    assert "nothing changed" in again and "stay trusted" in again and "review the hooks" not in again


def test_install_codex_reads_what_config_toml_already_says(project: Project) -> None:
    (project.root / ".git").mkdir()  # Codex keys a project's trust by its repository's root
    inner = project.root / "api"
    inner.mkdir()
    config = (f'model = "o3"\n[features]\nhooks = false\n'
              f'[projects.{json.dumps(str(project.root))}]\ntrust_level = "trusted"\n')
    said = codex_install(Project(inner, project.home), config)
    assert "turn hooks on" in said and "[features] hooks = false" in said and "no feature flag" not in said
    assert "the project is trusted" in said and "trust the project:" not in said


@pytest.mark.parametrize("config", ["model = \n", "\xff"], ids=["not-toml", "not-utf8"])
def test_install_codex_with_a_config_it_cannot_read_says_so_in_one_line(project: Project, config: str) -> None:
    home = project.home / ".codex"
    home.mkdir()
    (home / "config.toml").write_bytes(config.encode("latin-1"))
    said = codex_install(project)
    [line] = [l for l in said.splitlines() if "config.toml:" in l and "not checked" in l]
    assert "Traceback" not in said and "trust the project:" in said
    assert json.loads((project.root / ".codex" / "hooks.json").read_text())["hooks"]  # installed all the same
