"""A real model over HTTP (LiteLLM against the local OpenAI-compatible server) calling a tool
with arguments of another type than declared: refused before the rules, nothing runs, nobody is
asked, the model is told why in the tool's result (issue 22, finding 3)."""

from __future__ import annotations

import json

import pytest

from engine.runtime.engine import RunStatus
from tests.models.conftest import RealRun, fields, openai_model
from tests.models.llm_server import ModelServer, Turn

HOSTILE = "\"';touch BYPASSED;rm -r -f victimdir;#"

TOOLS = """
tool sh = builtin streetrace.cli
tool fs = builtin streetrace.fs
prompt p: \"\"\"You run commands.\"\"\"
agent main:
    instruction p
    tools sh, fs
"""

RULES = """
escalationRules:
  global:
    - {pattern: "rm -rf", action: deny}
"""


def tool_results(server: ModelServer, n: int) -> list[str]:
    return [m["content"] for m in server.requests[n]["body"]["messages"] if m["role"] == "tool"]


async def test_a_list_command_from_a_real_model_runs_nothing(real: RealRun, server: ModelServer) -> None:
    (real.workspace / "victimdir").mkdir()
    (real.workspace / "victimdir" / "keep.txt").write_text("still here")
    server.push(
        Turn(tool_calls=[("run_command", {"command": [HOSTILE]})]),
        Turn(tool_calls=[("write_file", {"path": "n.txt", "content": {"x": 1}, "mode": "a"})]),
        Turn(text="I give up."),
    )
    handle = await real.run(openai_model(server) + TOOLS, rules=RULES)
    assert handle.status is RunStatus.DONE, handle.error
    assert (real.workspace / "victimdir" / "keep.txt").read_text() == "still here"
    assert not (real.workspace / "BYPASSED").exists() and not (real.workspace / "n.txt").exists()
    assert fields(handle, "tool_call") == [] and fields(handle, "human_escalation") == []
    [first] = tool_results(server, 1)
    assert "run_command did not run: invalid arguments (argument 'command' must be a string, not a list)" in json.loads(first)["error"]
    second = json.loads(tool_results(server, 2)[-1])["error"]
    assert "argument 'content' must be a string, not an object" in second and "'mode' is not one of its arguments" in second
    logs = [f["message"] for f in fields(handle, "log")]
    assert sum("its arguments do not fit the tool's schema" in m for m in logs) == 2


@pytest.mark.timeout(60)  # before the check, the request waited for a person who never comes
async def test_ask_human_with_arguments_of_another_type_is_told_not_raised(real: RealRun, server: ModelServer) -> None:
    """The escalation tools are checked the same way: no request reaches a person."""
    server.push(
        Turn(tool_calls=[("ask_human", {"question": ["Use JWT?"], "reason": "other", "timeout": "soon"})]),
        Turn(text="Deciding myself."),
    )
    handle = await real.run(openai_model(server) + TOOLS)
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "Deciding myself." and fields(handle, "human_escalation") == []
    error = json.loads(tool_results(server, 1)[-1])["error"]
    assert "argument 'question' must be a string, not a list" in error and "argument 'timeout' must be a number" in error
