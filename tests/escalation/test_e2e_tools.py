"""Issue 4 end to end: tool gating by the rules, enforced in code (approve, deny, stop)."""

from pathlib import Path

import pytest

from engine.kernel.model import Audit, ResolvedBy, Response, ResponseType
from engine.runtime.engine import RunStatus
from e2e_support import TOOL_AGENT, Harness

SCRIPT = """\
agents:
  helper:
    - tool: write_file
      args: {path: "RELEASED.txt", content: "v1.4.2"}
    - text: "refused by rule"
      when: "denied by rule"
    - text: "refused, nothing written"
      when: "denied"
    - "written"
"""

RULES = """\
escalationRules:
  global:
    - {pattern: "released.txt", action: ask_user, timeout: 30}
  taskOverrides:
    deploy-production:
      requireConfirmation: true
    locked:
      rules:
        - {pattern: "write file", action: deny}
    halt:
      rules:
        - {pattern: "write file", action: stop}
"""


@pytest.mark.parametrize("task", ["task", "deploy-production"], ids=["ask_user rule", "requireConfirmation"])
async def test_tool_approved_by_a_human_runs(tmp_path, task) -> None:
    rules = RULES if task == "task" else RULES.replace('"released.txt"', '"nothing matches"')
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, rules)
    handle = h.start(task=task)
    pending = await h.pending()
    assert pending.escalation.origin.value == "tool_approval"
    assert not (h.workspace / "RELEASED.txt").exists()  # it waits for the human
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "approve"))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "written"
    assert (h.workspace / "RELEASED.txt").read_text() == "v1.4.2"
    [call] = h.events(handle, "tool_call")
    assert call["verdict"] == "confirmed" and call["tool"] == "write_file" and call["args"]["path"] == "RELEASED.txt"


async def test_tool_denied_by_a_human_does_not_run(tmp_path) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start()
    pending = await h.pending()
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "deny"))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "refused, nothing written"
    assert not (h.workspace / "RELEASED.txt").exists()
    assert h.events(handle, "tool_call")[0]["verdict"] == "denied"


async def test_unanswered_tool_approval_fails_closed(tmp_path) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start()
    await h.pending()
    h.clock.advance(30)
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "refused, nothing written"
    assert not (h.workspace / "RELEASED.txt").exists()
    assert h.events(handle, "decision")[0]["resolvedBy"] == "timeout_default"


async def test_deny_rule_refuses_without_asking(tmp_path) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start(task="locked")
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "refused by rule"
    assert not (h.workspace / "RELEASED.txt").exists()
    assert h.events(handle, "human_escalation") == []
    assert h.events(handle, "tool_call")[0]["verdict"] == "denied"


async def test_stop_rule_stops_the_task(tmp_path) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start(task="halt")
    assert await h.finish(handle) is RunStatus.STOPPED
    assert not (h.workspace / "RELEASED.txt").exists()


async def test_unmatched_tool_runs(tmp_path) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT.replace("RELEASED.txt", "notes.txt"), RULES)
    handle = h.start()
    assert await h.finish(handle) is RunStatus.DONE
    assert (h.workspace / "notes.txt").read_text() == "v1.4.2"
    assert h.events(handle, "tool_call")[0]["verdict"] == "allowed"


CLI_AGENT = TOOL_AGENT.replace("builtin streetrace.fs", "builtin streetrace.cli")
RM_RULES = """\
escalationRules:
  global:
    - {pattern: "rm -rf", action: deny}
"""


@pytest.mark.parametrize(
    ("command", "asks"),
    [("rm -r -f victim", False), ("'rm' -fr victim", False), ("$(echo rm) -rf victim", True), ("rm${IFS}-rf victim", True)],
)
async def test_a_deny_rule_for_rm_rf_holds_against_other_spellings(tmp_path, command: str, asks: bool) -> None:
    """A real shell would delete the folder for each of these; the rule (or a human) stops it."""
    script = f"""\
agents:
  helper:
    - tool: run_command
      args: {{command: {command!r}}}
    - text: "not run"
      when: "denied"
    - "ran"
"""
    h = Harness(tmp_path, CLI_AGENT, script, RM_RULES)
    (h.workspace / "victim").mkdir()
    (h.workspace / "victim" / "f.txt").write_text("keep")
    handle = h.start()
    if asks:
        pending = await h.pending()
        assert pending.escalation.origin.value == "tool_approval"
        h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "deny"))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "not run"
    assert (h.workspace / "victim" / "f.txt").read_text() == "keep"


DENIALS = {  # how the call was denied -> who the agent is told denied it
    "by a rule": ("locked", None, "rule 'write file' (deny, rules.yaml:9)"),
    "by a human": ("task", Response(ResponseType.OPTION, "deny"), "a human"),
    "by a human's text answer": ("task", Response(ResponseType.TEXT, text_response="not today"), "a human"),
    "by the answers file": ("task", (Response(ResponseType.OPTION, "deny"), ResolvedBy.ANSWERS_FILE), "the answers file"),
    "by a rule, on the edited arguments": (
        "checked", Response(ResponseType.OPTION, "approve", edited_args={"path": "secret.txt", "content": "x"}),
        "rule 'secret' (deny, rules.yaml:16), on the edited arguments"),
    "by the timeout default": ("task", "timeout", "the timeout default"),
}


@pytest.mark.parametrize("how", DENIALS)
async def test_every_denial_reads_the_same(tmp_path, how: str) -> None:
    """docs/runtime.md: a reply scripted `when: "denied"` follows every denied tool call,
    whoever denied it; the agent is told who."""
    task, answer, who = DENIALS[how]
    script = f"""\
agents:
  helper:
    - tool: write_file
      args: {{path: "RELEASED.txt", content: "v1.4.2"}}
    - text: "told who"
      when: {f"The tool call write_file was denied by {who}"!r}
    - text: "told in other words"
      when: "denied"
    - "written"
"""
    rules = RULES + "    checked:\n      requireConfirmation: true\n      rules:\n        - {pattern: secret, action: deny}\n"
    h = Harness(tmp_path, TOOL_AGENT, script, rules)
    handle = h.start(task=task)
    if answer == "timeout":
        await h.pending()
        h.clock.advance(30)
    elif answer is not None:
        pending = await h.pending()
        response, by = answer if isinstance(answer, tuple) else (answer, ResolvedBy.HUMAN)
        h.broker.answer(pending.escalation.id, response, by, Audit(via="test"))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result == "told who"
    assert not (h.workspace / "RELEASED.txt").exists() and not (h.workspace / "secret.txt").exists()
    assert h.events(handle, "tool_call")[0]["verdict"] == "denied"


DEMO = Path(__file__).parents[2] / "engine" / "demo"


@pytest.mark.parametrize("rules", [
    "escalationRules:\n  global:\n    - {pattern: write_file, action: deny}\n",  # a rule's denial
    None,  # the demo's own: the task override asks a person, who denies it
], ids=["a rule", "a person"])
async def test_the_deploy_demo_tells_a_denied_release_as_stopped(tmp_path, rules: str | None) -> None:
    """Its script follows a denial with "Release stopped": a rule's denial too, not only a person's."""
    h = Harness(tmp_path, (DEMO / "deploy-production.sr").read_text(), (DEMO / "deploy-production.yaml").read_text(),
                rules or (DEMO / "rules.yaml").read_text())
    handle = h.start(task="deploy-production", input="ship v1.4.2")
    if rules is None:
        h.broker.answer((await h.pending()).escalation.id, Response(ResponseType.OPTION, "deny"))
    assert await h.finish(handle) is RunStatus.DONE
    assert handle.result.startswith("Release stopped") and not (h.workspace / "RELEASED.txt").exists()
