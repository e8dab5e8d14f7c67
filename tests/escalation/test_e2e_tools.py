"""Issue 4 end to end: tool gating by the rules, enforced in code (approve, deny, stop)."""

import pytest

from engine.kernel.model import Response, ResponseType
from engine.runtime.engine import RunStatus
from e2e_support import TOOL_AGENT, Harness

SCRIPT = """\
agents:
  helper:
    - tool: write_file
      args: {path: "RELEASED.txt", content: "v1.4.2"}
    - text: "refused, nothing written"
      when: "denied"
    - text: "refused by rule"
      when: "refused"
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
      when: "refused"
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
