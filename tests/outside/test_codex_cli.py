"""The real Codex CLI (0.171.0, from npm: tests/outside/package.json) against a scripted Responses
API (openai_server.py): its model calls the shell tool with `touch marker`; the hook, installed
by `escalate hook install codex --project` as the README says, sends the call to a person; the
command must not run while the escalation waits; `escalate answer` (or a rule, or the deadline)
decides; Codex's last message and the files tell what happened.

Codex is configured as a user would: a custom model provider in `$CODEX_HOME/config.toml`, the
project marked trusted (what `codex exec --trust` writes: an untrusted project's `.codex/` is not
read), the installed hooks trusted as its hook review does (Codex runs a new hook only once
trusted). `codex exec` never asks for approval (its policy is `never`), so there PreToolUse is
where the decision is made: denied, or nothing; it runs with `--sandbox danger-full-access`
inside the test's temporary project (Codex's Linux sandbox is not what is tested). Codex as its
TUI drives it, through `codex app-server` (approval `on-request`, sandbox read-only), asks twice:
PreToolUse, then its own approval's PermissionRequest.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator

import pytest
from conftest import HERE, WAIT, Project, escalate, project_env
from openai_server import ScriptedResponses
from test_hook import outputs
from tests.npm_packages import installed

CODEX = HERE / "node_modules" / ".bin" / "codex"
KEY = "ESCALATE_TEST_OPENAI_KEY"
ASK_TOUCH = """escalationRules:
  global:
    - pattern: "touch"
      action: ask_user
      timeout: 600
"""


@pytest.fixture
def model() -> Iterator[ScriptedResponses]:
    scripted = ScriptedResponses().start()
    yield scripted
    scripted.stop()


class Codex:
    def __init__(self, project: Project, model: ScriptedResponses) -> None:
        installed(HERE, "codex")
        self.project = project
        self.home = project.home / ".codex"
        self.last = project.home / "last-message.txt"
        self.home.mkdir(exist_ok=True)
        (self.home / "config.toml").write_text(
            'model = "scripted"\nmodel_provider = "scripted"\ncheck_for_update_on_startup = false\n'
            f'[model_providers.scripted]\nname = "scripted"\nbase_url = {json.dumps(model.url)}\n'
            f'env_key = "{KEY}"\nwire_api = "responses"\n'
            '[analytics]\nenabled = false\n')  # the project's trust: as `install` says (Codex.install)
        self.proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in project_env().items() if not k.startswith(("OPENAI_", "CODEX_"))}
        env.update(HOME=str(self.project.home), CODEX_HOME=str(self.home), **{KEY: "sk-test"})
        return env

    def install(self) -> None:
        """`escalate hook install codex --project`, the project trusted as its output says (the
        line for config.toml), then the hooks trusted as a person does in Codex's hook review
        (its app server's `hooks/list`, then `hooks.state` written with their hashes)."""
        done = escalate("hook", "install", "codex", "--project", str(self.project.root), cwd=self.project.root,
                        env={**project_env(), "CODEX_HOME": str(self.home)})
        assert done.returncode == 0, done.stderr.decode()
        said = done.stdout.decode()
        config, table = said.split("or put in ", 1)[1].split("\n", 1)[0].split(": ", 1)
        assert Path(config) == self.home / "config.toml" and "review the hooks" in said, said
        key, setting = table.split("] ", 1)
        with open(config, "a", encoding="utf-8") as out:
            out.write(f"{key}]\n{setting}\n")
        with AppServer(self) as app:
            [listed] = app.request("hooks/list", {"cwds": [str(self.project.root)]})["data"]
            assert {h["eventName"] for h in listed["hooks"]} == {"preToolUse", "permissionRequest"}, listed
            assert "trusted" not in {h["trustStatus"] for h in listed["hooks"]}, listed  # reviewed next
            trusted = {h["key"]: {"trusted_hash": h["currentHash"]} for h in listed["hooks"]}
            app.request("config/value/write", {"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": trusted})
            [listed] = app.request("hooks/list", {"cwds": [str(self.project.root)]})["data"]
            assert {h["trustStatus"] for h in listed["hooks"]} == {"trusted"}, listed

    def start(self, prompt: str = "make the marker") -> subprocess.Popen[bytes]:
        self.proc = subprocess.Popen(
            [str(CODEX), "exec", "--strict-config", "--skip-git-repo-check",
             "--sandbox", "danger-full-access", "--color", "never", "-o", str(self.last), prompt],
            cwd=self.project.root, env=self.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        return self.proc

    def finish(self) -> str:
        """Codex's last message, once it ended well."""
        assert self.proc is not None
        _, err = self.proc.communicate(timeout=WAIT)
        assert self.proc.returncode == 0, err.decode()[-3000:]
        return self.last.read_text()


class AppServer:
    """`codex app-server`: the JSON-RPC server (one JSON object a line on stdio) Codex's own
    clients drive. Every notification and every request it makes of its client is kept; a
    request for approval is declined (the test checks none is made)."""

    def __init__(self, codex: Codex) -> None:
        self.proc = subprocess.Popen([str(CODEX), "app-server"], cwd=codex.project.root, env=codex.env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[dict | None] = queue.Queue()
        self.seen: list[dict] = []
        self.asked: list[dict] = []  # requests Codex made of its client
        self.ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()
        self.request("initialize", {"clientInfo": {"name": "escalate-test", "version": "1"}})
        self._send({"method": "initialized"})

    def __enter__(self) -> "AppServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.kill()
        self.proc.wait()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def _send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def next(self) -> dict:
        message = self.lines.get(timeout=WAIT)
        assert message is not None, "codex app-server ended"
        if "method" in message:
            self.seen.append(message)
            if "id" in message:
                self.asked.append(message)
                self._send({"id": message["id"], "result": {"decision": "decline"}})
        return message

    def request(self, method: str, params: dict) -> dict:
        mine = next(self.ids)
        self._send({"id": mine, "method": method, "params": params})
        while True:
            message = self.next()
            if message.get("id") == mine and "method" not in message:
                assert "error" not in message, message
                return message["result"]

    def until(self, method: str) -> dict:
        while True:
            message = self.next()
            if message.get("method") == method:
                return message


@pytest.fixture
def codex(project: Project, model: ScriptedResponses) -> Iterator[Codex]:
    agent = Codex(project, model)
    yield agent
    if agent.proc is not None and agent.proc.poll() is None:
        agent.proc.kill()
        agent.proc.communicate()


def _raised(project: Project, codex: Codex) -> dict:
    [row] = project.wait_pending()
    assert not (project.root / "marker").exists(), "the command ran while its escalation waited"
    assert codex.proc is not None and codex.proc.poll() is None
    escalation = row["payload"]["escalation"]
    assert escalation["question"] == "Allow codex to call the tool Bash?"  # Codex names its shell tool Bash
    assert escalation["task_id"] == "shop"  # the project folder's name
    assert "touch marker" in escalation["context"]
    assert [o["id"] for o in escalation["options"]] == ["approve", "deny"]
    return row


def test_approved_from_the_shell_the_command_runs(project: Project, codex: Codex) -> None:
    project.rules(ASK_TOUCH)
    codex.install()
    codex.start()
    row = _raised(project, codex)
    listed = escalate("runs", "--db", project.db_url, "--format", "json", cwd=project.root)
    [run] = json.loads(listed.stdout)
    assert run["workflow"] == "codex" and run["status"] == "waiting" and run["pending"][0]["id"] == row["id"]
    assert project.answer(row["id"], "--approve").returncode == 0
    last = codex.finish()
    assert (project.root / "marker").exists()
    assert last.startswith("RESULT:") and "exited with code 0" in last and "blocked" not in last
    assert project.wait_status(row["id"], "decided")["resolved_by"] == "human"


def test_denied_with_instructions_the_model_reads_them(project: Project, codex: Codex, model: ScriptedResponses) -> None:
    project.rules(ASK_TOUCH)
    codex.install()
    codex.start()
    row = _raised(project, codex)
    assert project.answer(row["id"], "--deny", "--instructions", "use the build folder instead").returncode == 0
    last = codex.finish()
    assert not (project.root / "marker").exists()
    [output] = model.tool_outputs()
    assert "denied by a human" in output and "use the build folder instead" in output
    assert last == f"RESULT: {output}"


def test_approved_with_edited_arguments_codex_refuses_them_saying_why(project: Project, codex: Codex,
                                                                     model: ScriptedResponses) -> None:
    project.rules(ASK_TOUCH)
    codex.install()
    codex.start()
    row = _raised(project, codex)
    assert project.answer(row["id"], "--approve", "--args", json.dumps({"command": "touch edited"})).returncode == 0
    codex.finish()
    assert not (project.root / "marker").exists() and not (project.root / "edited").exists()
    [output] = model.tool_outputs()
    assert "edited arguments, which this agent cannot take" in output and "touch edited" in output


def test_a_rule_that_allows_decides_without_a_person(project: Project, codex: Codex) -> None:
    project.rules("""escalationRules:
  global:
    - pattern: "touch marker"
      action: allow
""")
    codex.install()
    codex.start()
    assert codex.finish().startswith("RESULT:")
    assert (project.root / "marker").exists()
    assert project.rows() == []  # decided by the rule: nothing raised, no database needed


def test_a_rule_that_stops_the_task_blocks_the_call(project: Project, codex: Codex, model: ScriptedResponses) -> None:
    """Codex 0.171 refuses `continue: false` and `stopReason` in a PreToolUse answer: an answer
    carrying them is invalid, and Codex runs the call as if no hook had spoken."""
    project.rules("""escalationRules:
  global:
    - pattern: "touch"
      action: stop
""")
    codex.install()
    codex.start()
    codex.finish()
    assert not (project.root / "marker").exists()
    [output] = model.tool_outputs()
    assert "stopped the task" in output


def test_nobody_answers_the_default_denies_as_timeout_default(project: Project, codex: Codex,
                                                              model: ScriptedResponses) -> None:
    project.rules(ASK_TOUCH.replace("timeout: 600", "timeout: 2"))
    codex.install()
    codex.start()
    codex.finish()
    assert not (project.root / "marker").exists()
    [output] = model.tool_outputs()
    assert "denied by the timeout default" in output
    [row] = project.rows()
    assert row["status"] == "decided" and row["resolved_by"] == "timeout_default"


def test_codex_killed_its_request_is_withdrawn_and_the_call_never_runs(project: Project, codex: Codex,
                                                                       model: ScriptedResponses) -> None:
    """SIGKILL to `codex`: the npm package's Node wrapper. On Node older than 22.15 it runs the
    native binary as a child, which outlives it; the hook sees its parent's parent gone and
    withdraws. A failed hook would let that Codex run the call: it is told no instead."""
    project.rules(ASK_TOUCH)
    codex.install()
    proc = codex.start()
    row = _raised(project, codex)
    proc.kill()
    proc.communicate(timeout=WAIT)  # the native Codex, if it outlived the wrapper, ends with its turn
    assert project.wait_status(row["id"], "withdrawn")["decision"] is None
    assert not (project.root / "marker").exists()
    assert all("request was withdrawn" in output for output in model.tool_outputs())


# What Codex 0.171.0 refuses in a hook's answer (its binary's "unsupported ..." messages): an
# answer carrying any of these is a failed hook, and the call runs. Checked without the CLI too.
REFUSED = {"PreToolUse": {"continue", "stopReason", "suppressOutput", "updatedInput"},
           "PermissionRequest": {"continue", "stopReason", "suppressOutput", "updatedInput", "updatedPermissions"}}


def _hook_input(project: Project, event: str) -> bytes:
    """What the real CLI sent (session_id ... tool_use_id), PermissionRequest without tool_use_id."""
    data = {"session_id": "01a21a3b-a432-73a2-9e3d-44a1448f139a", "turn_id": "01a21a3b-a444-7e22-bade-65b036c954a1",
            "transcript_path": str(project.home / "rollout.jsonl"), "cwd": str(project.root), "hook_event_name": event,
            "model": "scripted", "permission_mode": "bypassPermissions", "tool_name": "Bash",
            "tool_input": {"command": "touch marker"}}
    if event == "PreToolUse":
        data["tool_use_id"] = "call_1"
    return json.dumps(data).encode()


def _refused_fields(event: str, answer: dict) -> set[str]:
    out = answer.get("hookSpecificOutput", {})
    found = (set(answer) | set(out) | set(out.get("decision", {}))) & REFUSED[event]
    if out.get("permissionDecision") in ("allow", "ask") or out.get("decision", {}).get("interrupt"):
        found.add(str(out.get("permissionDecision") or "interrupt"))
    return found


@pytest.mark.parametrize("event", ["PreToolUse", "PermissionRequest"])
def test_a_stop_rule_answers_codex_with_nothing_it_refuses(project: Project, event: str) -> None:
    project.rules(ASK_TOUCH.replace("ask_user", "stop"))
    done = escalate("hook", "codex", cwd=project.root, stdin=_hook_input(project, event))
    answer = json.loads(done.stdout)
    assert done.returncode == 0 and _refused_fields(event, answer) == set()
    assert "stopped the task" in json.dumps(answer)


@pytest.mark.parametrize("event", ["PreToolUse", "PermissionRequest"])
def test_a_stopped_hook_denies_codex_the_call(project: Project, event: str) -> None:
    import signal

    project.rules(ASK_TOUCH)
    hook = subprocess.Popen([sys.executable, "-m", "engine", "hook", "codex"], cwd=project.root, env=project_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert hook.stdin is not None
    hook.stdin.write(_hook_input(project, event))
    hook.stdin.close()
    [row] = project.wait_pending()
    hook.send_signal(signal.SIGTERM)
    out, err = outputs(hook)
    assert hook.returncode == 0, err.decode()
    answer = json.loads(out)
    text = json.dumps(answer)
    assert '"deny"' in text and "request was withdrawn" in text and _refused_fields(event, answer) == set()
    assert project.wait_status(row["id"], "withdrawn")["decision"] is None


def test_interactive_codex_asks_twice_one_escalation_answers_both(project: Project) -> None:
    """Codex as its TUI drives it (the app server; approval `on-request`, sandbox read-only): the
    model asks to run outside the sandbox, so PreToolUse fires, then Codex's own approval, whose
    PermissionRequest hook (its input adds the justification as `description`) is answered from
    the same decision: one escalation, and Codex asks its client nothing."""
    model = ScriptedResponses(sandbox_permissions="require_escalated", justification="make the marker").start()
    try:
        codex = Codex(project, model)
        project.rules(ASK_TOUCH)
        codex.install()
        with AppServer(codex) as app:
            thread = app.request("thread/start", {"cwd": str(project.root), "approvalPolicy": "on-request",
                                                  "sandbox": "read-only"})["thread"]["id"]
            app.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": "make the marker"}]})
            [row] = project.wait_pending()
            assert not (project.root / "marker").exists()
            assert project.answer(row["id"], "--approve").returncode == 0
            app.until("turn/completed")
        hooks = [m["params"]["run"]["eventName"] for m in app.seen if m.get("method") == "hook/completed"]
        assert hooks == ["preToolUse", "permissionRequest"], app.seen
        assert app.asked == []  # the PermissionRequest hook answered: no approval dialog
        assert (project.root / "marker").exists()
        [decided] = project.rows()
        assert decided["id"] == row["id"] and decided["resolved_by"] == "human"
        [output] = model.tool_outputs()
        assert "exited with code 0" in output
    finally:
        model.stop()
