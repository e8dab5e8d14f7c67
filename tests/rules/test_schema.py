"""The rules, script and answers formats as pydantic models: the loaders agree with them, every
shipped file validates against the published JSON Schema, and what only the models check
(notify, budgets, usage) is refused with FILE:LINE:COL."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from engine.escalation import answers
from engine.runtime import script
from engine.runtime.script import ScriptError, parse_script
from rules import Rules, RulesError, loader, parse_rules
from rules.schema import (
    AnswerEntry,
    EscalationRulesSection,
    NotifyEntry,
    ReplyEntry,
    RulesFile,
    json_schema,
    validate_document,
)
from rules.yamlnodes import Reader
from tests.cli_here import escalate_here

ROOT = Path(__file__).resolve().parents[2]


def _keys(model) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


def test_the_loaders_accept_exactly_the_models_keys() -> None:
    assert set(loader._TOP) == _keys(RulesFile)
    assert set(loader._SECTIONS) == _keys(EscalationRulesSection)
    assert set(loader._NOTIFY) == _keys(NotifyEntry)
    assert set(script._KEYS) == _keys(ReplyEntry)
    assert set(answers._KEYS) == _keys(AnswerEntry)


def _shipped(kind: str) -> list[Path]:
    yamls = [*ROOT.glob("engine/demo/*.yaml"), *ROOT.glob("engine/examples/*.yaml"), ROOT / "rules/default.yaml"]
    rules = {ROOT / "rules/default.yaml", ROOT / "engine/demo/rules.yaml"}
    return sorted(p for p in yamls if (p in rules) == (kind == "rules"))


@pytest.mark.parametrize("kind", ["rules", "script"])
def test_every_shipped_file_validates_against_the_published_schema(kind: str) -> None:
    schema = json.loads(json_schema(kind))
    jsonschema.Draft202012Validator.check_schema(schema)
    files = _shipped(kind)
    assert files
    for path in files:
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_the_shipped_rules_pass_the_models_the_loader_skips_for_them() -> None:
    """`default_rules()` does not build the pydantic models at start-up (docs/startup.md): the
    shipped files must pass them, as every user's file does, and load to the same rules."""
    for path in _shipped("rules"):
        text = path.read_text()
        validate_document(RulesFile, Reader(text, str(path)), what="the rules file")
    validated = parse_rules((ROOT / "rules/default.yaml").read_text(), "rules/default.yaml", base=Rules())
    assert validated.summary() == loader.default_rules().summary()


def test_the_published_schema_refuses_what_the_loader_refuses() -> None:
    schema = json.loads(json_schema("rules"))
    for bad in ({"escalationRules": {"globl": []}}, {"notify": {"command": []}},
                {"escalationRules": {"defaults": {"test_failure": {"onTimeout": "later"}}}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    answers_schema = json.loads(json_schema("answers"))
    jsonschema.validate([{"responseType": "option", "selectedOption": "jwt"}], answers_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"responseType": "maybe"}], answers_schema)


@pytest.mark.parametrize(
    "text, line, col, message",
    [
        ("notify:\n  command: []\n", 2, 12, "notify.command must name a program"),
        ("notify:\n  command: [notify-send]\n  timeout: 0\n", 3, 12, "notify.timeout must be more than 0"),
        ("notify:\n  comand: [x]\n", 2, 3, "notify: unknown key 'comand' (did you mean 'command'?)"),
        ("escalationRules:\n  budgets:\n    default: {tokens: 0}\n", 3, 23, "budgets.default.tokens must be at least 1"),
        ("escalationRules:\n  budgets:\n    default: {tokens: 10, warnAt: 2}\n", 3, 35, "warnAt"),
        ("escalationRules:\n  budgets:\n    deploy: {tokns: 10}\n", 3, 14, "unknown key 'tokns'"),
    ],
)
def test_notify_and_budgets_are_refused_with_their_position(text: str, line: int, col: int, message: str) -> None:
    with pytest.raises(RulesError) as info:
        parse_rules(text, "r.yaml")
    assert (info.value.line, info.value.column) == (line, col)
    assert message in str(info.value)


def test_notify_and_budgets_load() -> None:
    rules = parse_rules("notify:\n  command: [relay, --to, phone]\n  timeout: 3\n"
                        "escalationRules:\n  budgets:\n    default: {tokens: 200000, warnAt: 0.8}\n", "r.yaml")
    assert rules.notify is not None and rules.notify.command == ("relay", "--to", "phone") and rules.notify.timeout == 3


def test_script_usage_is_checked() -> None:
    good = parse_script("agents:\n  a:\n    - {text: hi, usage: {input: 3, output: 4}}\n", "s.yaml")
    assert good.agents["a"][0].text == "hi"
    with pytest.raises(ScriptError) as info:
        parse_script("agents:\n  a:\n    - text: hi\n      usage: {input: -1}\n", "s.yaml")
    assert (info.value.line, info.value.column) == (4, 22)
    assert "usage.input must be at least 0" in str(info.value)


def _escalate(*args: str) -> subprocess.CompletedProcess[str]:
    return escalate_here(*args, cwd=Path.cwd())  # what the command says and returns, in this process


def test_rules_schema_command_prints_each_format() -> None:
    for kind, title in (("rules", "RulesFile"), ("script", "ScriptFile"), ("answers", "AnswersFile")):
        done = _escalate("rules", "schema", kind)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["title"] == title
    assert json.loads(_escalate("rules", "schema").stdout)["title"] == "RulesFile"
    bad = _escalate("rules", "schema", "nope")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_rules_check_reports_a_schema_error_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text("notify:\n  command: [relay]\n  timeout: soon\n")
    done = _escalate("rules", "check", str(path))
    assert done.returncode == 1
    assert done.stderr.strip() == f"{path}:3:12: notify.timeout must be a number, not the string 'soon'"
