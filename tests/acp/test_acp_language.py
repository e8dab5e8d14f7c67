"""`model NAME = acp "CMD ARGS"`: parsed by both back ends, checked (E0023; E0024 for what an ACP
agent cannot be given), generated safely."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.runtime.acp.workflow import agent_source
from tests.lang.helpers import compile_text, load
from tests.cli_here import escalate_here
from tests.lang.test_fastparse import both

AGENT = 'prompt p using model "coder": """Fix it"""\nagent main:\n    instruction p\n'


def test_an_acp_model_names_its_command() -> None:
    cls = load(f'model coder = acp "gemini --experimental-acp"\n{AGENT}')
    assert cls.MODELS["coder"].acp_command == "gemini --experimental-acp"
    assert cls.MODELS["coder"].provider is None


def test_acp_stays_a_soft_keyword() -> None:
    cls = load('model acp = acp\nmodel m = acp "x --acp"\nprompt p using model "acp": """hi"""\nagent acp:\n    instruction p\n')
    assert cls.MODELS["acp"].model_id == "acp" and cls.MODELS["m"].acp_command == "x --acp"


def test_both_parsers_agree_on_the_form() -> None:
    for source in (f"model coder = acp 'claude-code-acp --flag \"a b\"'\n{AGENT}", "model acp = acp\n",
                   'model c = acp "x"\nmodel d = acp\n'):
        ref, fast = both(source)
        assert ref is not None and ref == fast


@pytest.mark.parametrize(("command", "said"), [
    ('"gemini \'oops"', "the ACP command cannot be split into words (no closing quotation)"),
    ('"   "', "the ACP command is empty"),
    ('"trailing \\\\"', "cannot be split into words"),
])
def test_a_bad_command_is_one_positioned_error(command: str, said: str) -> None:
    result = compile_text(f"model coder = acp {command}\n{AGENT}")
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("E0023", 1, 19)]
    assert said in result.diagnostics[0].message and "'coder'" in result.diagnostics[0].message


def test_hostile_command_text_is_only_ever_a_literal() -> None:
    hostile = "x'); import os; os.system('touch /tmp/pwned'); ('"
    cls = load(agent_source(hostile))
    assert cls.MODELS["main"].acp_command == hostile


def test_escalate_check_reports_it_in_text_and_json(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sr"
    bad.write_text(f'model coder = acp "gemini \'oops"\n{AGENT}')
    text = escalate_here("check", str(bad), cwd=Path.cwd())
    assert text.returncode == 1
    assert f"{bad}:1:19: error[E0023]: model 'coder': the ACP command cannot be split" in text.stdout + text.stderr
    as_json = escalate_here("check", str(bad), "--format", "json", cwd=Path.cwd())
    assert [(d["code"], d["line"], d["column"]) for d in json.loads(as_json.stdout)] == [("E0023", 1, 19)]


ACP_AGENT = '''model main = anthropic/claude-sonnet
model coder = acp "gemini --experimental-acp"
tool fs = builtin streetrace.fs
prompt lead: """You lead."""
prompt coding using model "coder": """You code."""
agent helper:
    instruction lead
agent fix:
    instruction coding
'''


def test_an_acp_agent_given_tools_agents_or_tool_handlers_is_e0024_at_each() -> None:
    source = ACP_AGENT + "    tools fs\n    use helper\n    delegate helper\n    on tool-result do\n        mask pii\n    end\n"
    result = compile_text(source)
    got = [(d.code, d.line, d.column) for d in result.diagnostics if d.severity == "error"]
    assert got == [("E0024", 10, 5), ("E0024", 11, 5), ("E0024", 12, 5), ("E0024", 13, 5)]
    messages = [d.message for d in result.diagnostics if d.code == "E0024"]
    assert messages[0] == "agent 'fix' runs on the ACP agent 'coder': it cannot be given 'tools'"
    assert messages[1] == "agent 'fix' runs on the ACP agent 'coder': it cannot 'use' other agents"
    assert messages[3] == "agent 'fix' runs on the ACP agent 'coder': a 'tool-result' handler of its own never runs"


def test_main_as_an_acp_model_makes_every_agent_without_its_own_model_acp() -> None:
    result = compile_text('model main = acp "goose acp"\nprompt p: """x"""\nagent a:\n    instruction p\n    use a\n')
    assert [(d.code, d.line) for d in result.diagnostics] == [("E0024", 5)]


def test_an_acp_agent_may_be_a_target_expect_a_schema_escalate_and_take_history() -> None:
    source = ACP_AGENT.replace('prompt coding using model "coder":', 'schema S:\n    ok: bool\nprompt coding using model "coder" expecting S:') + (
        '    history keep\n    on output do\n        mask email\n    end\n'
        'policy keep:\n    strategy: truncate\n'
        'agent boss:\n    instruction lead\n    use fix\nagent lead2:\n    instruction lead\n    delegate fix\n'
        'flow main:\n    $r = run agent boss $input, on escalate return "x"\n    return $r\n')
    result = compile_text(source)
    assert [d for d in result.diagnostics if d.severity == "error"] == []


def test_escalate_check_reports_e0024_with_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sr"
    bad.write_text(ACP_AGENT + "    use helper\n")
    text = escalate_here("check", str(bad), cwd=Path.cwd())
    assert text.returncode == 1
    assert f"{bad}:10:5: error[E0024]: agent 'fix' runs on the ACP agent 'coder': it cannot 'use' other agents" in text.stdout
