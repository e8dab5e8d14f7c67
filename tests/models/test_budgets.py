"""Token budgets (rules `budgets:`): counted from real usage or the script's `usage:`, a
cost_warning the runtime raises itself at warnAt, a stop at 100 % unless a person raised it."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main
from engine.runtime.engine import RunStatus
from engine.runtime.script import ScriptError, parse_script
from rules.loader import RulesError, default_rules, parse_rules
from tests.models.conftest import RealRun, fields, openai_model
from tests.models.llm_server import ModelServer, Turn

BUDGET = """
escalationRules:
  budgets:
    default: {tokens: 1000, warnAt: 0.5}
"""

THREE_CALLS = """
prompt p: \"\"\"You help.\"\"\"
agent main:
    instruction p
flow main:
    $a = run agent main $input
    $b = run agent main $a
    $c = run agent main $b
    return $c
"""

SCRIPT = """
agents:
  main:
    - {text: one, usage: {input: 500, output: 100}}
    - {text: two, usage: {input: 300, output: 100}}
    - {text: three, usage: {input: 10, output: 10}}
"""


def test_shipped_budget_and_task_entries() -> None:
    assert default_rules().budget("anything").tokens == 200000
    rules = parse_rules("escalationRules:\n  budgets:\n    deploy-production: {tokens: 50000}\n"
                        "    default: {tokens: 1000, warnAt: 0.5}\n", "r.yaml")
    prod = rules.budget("deploy_production")  # matched like taskOverrides: '_' and '-' alike
    assert (prod.tokens, prod.warn_at, prod.source) == (50000, 0.5, "budgets.deploy-production")
    assert rules.budget("other").source == "budgets.default"
    assert parse_rules("escalationRules:\n  budgets: {}\n", "r.yaml").budget("x") is None


@pytest.mark.parametrize("text, where", [
    ("    x: {warnAt: 0.5}\n", "r.yaml:3:8: budgets.x: missing required key 'tokens'"),
    ("    default: {tokens: 0}\n", "r.yaml:3:23: budgets.default.tokens must be at least 1"),
    ("    default: {tokens: 1.5}\n", "r.yaml:3:23: budgets.default.tokens must be a whole number"),
    ("    default: {tokens: 10, warnAt: 2}\n", "r.yaml:3:35: budgets.default.warnAt must be at most 1"),
    ("    default: {tokens: 10, warnAt: 0}\n", "r.yaml:3:35: budgets.default.warnAt must be above 0"),
    ("    default: {tokens: 10, warn: 1}\n", "r.yaml:3:27: budgets.default: unknown key 'warn' (did you mean 'warnAt'?)"),
])
def test_bad_budgets_are_positioned(text: str, where: str) -> None:
    with pytest.raises(RulesError) as caught:
        parse_rules("escalationRules:\n  budgets:\n" + text, "r.yaml")
    assert str(caught.value).startswith(where)


def test_script_usage_is_checked() -> None:
    assert parse_script(SCRIPT, "s.yaml").agents["main"][0].usage == (500, 100)
    with pytest.raises(ScriptError, match=r"s.yaml:3:32: agent 'main': reply: usage.input must be at least 0"):
        parse_script("agents:\n  main:\n    - {text: x, usage: {input: -1}}\n", "s.yaml")


@pytest.mark.parametrize("answers, status, warnings, result", [
    ("[]\n", RunStatus.STOPPED, 1, None),  # shipped default: continue; then 100 % stops
    ("- {responseType: option, selectedOption: stop}\n", RunStatus.STOPPED, 1, None),
    ("- {responseType: option, selectedOption: raise}\n", RunStatus.DONE, 2, "three"),  # 2000 now: asked again at 1000
])
async def test_scripted_usage_warns_and_stops(tmp_path, answers, status, warnings, result) -> None:
    from tests.runtime.conftest import Harness
    from engine.lang.compiler import compile_source, workflow_class
    from pathlib import Path

    cls = workflow_class(compile_source(THREE_CALLS, Path("wf.sr")))
    handle = await Harness(tmp_path).run(cls, SCRIPT, rules=BUDGET, answers=answers, input="go")
    assert handle.status is status, handle.error
    raised = fields(handle, "human_escalation")
    assert len(raised) == warnings
    assert raised[0]["reason"] == "cost_warning" and raised[0]["origin"] == "budget"
    assert raised[0]["question"].startswith("Token budget almost used up: 600 of 1,000 tokens (60 %)")
    assert [o["id"] for o in raised[0]["options"]] == ["continue", "stop", "raise"]
    assert raised[0]["onTimeout"] == "continue"
    if status is RunStatus.STOPPED:
        assert "token budget" in handle.error
    assert handle.result == result


async def test_real_usage_warns_tells_the_agent_and_stops(real: RealRun, server: ModelServer) -> None:
    tools = ('tool fs = builtin streetrace.fs\nprompt p: """You write."""\nagent main:\n    instruction p\n    tools fs\n')
    call = [("list_directory", {"path": "."})]
    server.push(Turn(tool_calls=call, usage=(600, 0)), Turn(tool_calls=call, usage=(500, 0)), Turn(text="never"))
    handle = await real.run(openai_model(server) + tools, rules=BUDGET,
                            answers="- {responseType: option, selectedOption: continue}\n")
    assert handle.status is RunStatus.STOPPED
    assert handle.error == "token budget used up: 1,100 of 1,000 tokens (budgets.default in the rules)"
    assert handle.tokens == 1100
    assert len(server.requests) == 2  # the third turn was never asked
    (raised,) = fields(handle, "human_escalation")
    assert raised["reason"] == "cost_warning"
    system = server.requests[1]["body"]["messages"][0]["content"]
    assert "Token budget: 600 of 1,000 tokens used" in system and "Chosen option: continue" in system
    assert "Token budget" not in server.requests[0]["body"]["messages"][0]["content"]


def test_escalate_runs_shows_tokens(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wf.sr").write_text(THREE_CALLS)
    (tmp_path / "s.yaml").write_text(SCRIPT)
    (tmp_path / "r.yaml").write_text(BUDGET)
    (tmp_path / "a.yaml").write_text("- {responseType: option, selectedOption: raise}\n")
    assert main(["run", "wf.sr", "--script", "s.yaml", "--rules", "r.yaml", "--answers", "a.yaml"]) == 0
    capsys.readouterr()
    assert main(["runs", "--all", "--format", "json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["status"] == "done" and listed["tokens"] == 1020
    assert main(["runs", "--all"]) == 0
    assert "1,020 tokens" in capsys.readouterr().out
