"""Issue 23: a tool call gets one verdict from the rules, carried through the confirmation pause
and never computed again; an edit a person approves is checked once more, once. Real runs (the
engine, ADK with the scripted model, the broker), counting how often the rules read a call."""

from collections import Counter
from typing import Any

import pytest

from engine.kernel.model import Response, ResponseType
from engine.runtime.engine import RunStatus
from e2e_support import TOOL_AGENT, Harness
from rules.model import Rules

SCRIPT = """\
agents:
  helper:
    - tool: write_file
      args: {path: "RELEASED.txt", content: "v1.4.2"}
    - text: "refused"
      when: "denied"
    - "written"
"""

RULES = """\
escalationRules:
  global:
    - {pattern: "released.txt", action: ask_user, timeout: 30}
"""


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """How many times the rules matched each tool call, by (tool, path)."""
    counted: Counter = Counter()
    match = Rules.match_tool

    def counting(self: Rules, task: str, tool: str, args: dict[str, Any]) -> Any:
        counted[(tool, args.get("path"))] += 1
        return match(self, task, tool, args)

    monkeypatch.setattr(Rules, "match_tool", counting)
    return counted


async def test_an_allowed_call_is_judged_once(tmp_path, reads: Counter) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT.replace("RELEASED.txt", "notes.txt"), RULES)
    handle = h.start()
    assert await h.finish(handle) is RunStatus.DONE
    assert h.events(handle, "tool_call")[0]["verdict"] == "allowed"
    assert reads == {("write_file", "notes.txt"): 1}


async def test_a_confirmed_call_is_judged_once_through_the_pause(tmp_path, reads: Counter) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start()
    pending = await h.pending()
    assert reads == {("write_file", "RELEASED.txt"): 1}  # the verdict that paused the agent
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "approve"))
    assert await h.finish(handle) is RunStatus.DONE
    assert (h.workspace / "RELEASED.txt").read_text() == "v1.4.2"
    assert h.events(handle, "tool_call")[0]["verdict"] == "confirmed"
    assert reads == {("write_file", "RELEASED.txt"): 1}  # carried to the answer, not read again


async def test_an_edit_is_checked_once(tmp_path, reads: Counter) -> None:
    h = Harness(tmp_path, TOOL_AGENT, SCRIPT, RULES)
    handle = h.start()
    pending = await h.pending()
    edited = {"path": "notes.txt", "content": "v1.4.3"}
    h.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "approve", edited_args=edited))
    assert await h.finish(handle) is RunStatus.DONE
    assert (h.workspace / "notes.txt").read_text() == "v1.4.3"
    assert not (h.workspace / "RELEASED.txt").exists()
    [call] = h.events(handle, "tool_call")
    assert call["verdict"] == "confirmed" and call["editedArgs"]["path"] == "notes.txt"
    assert reads == {("write_file", "RELEASED.txt"): 1, ("write_file", "notes.txt"): 1}
