"""Helpers for runtime tests: an Engine on the real broker/desk, a scripted model, and
workflow classes written the way the code generator writes them (specs + async flow methods)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine.cli.main import main
from engine.escalation.answers import parse_answers
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import RealClock
from engine.escalation.headless import HeadlessResponder
from engine.runtime.engine import CompiledWorkflow, Engine, RunHandle
from engine.runtime.script import parse_script
from engine.flow.spec import WorkflowBase
from rules.loader import default_rules, parse_rules


class Harness:
    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.waiting: list[Any] = []

    def engine(self, script: str | None, *, rules: str | None = None, answers: str | None = None, clock: Any = None) -> Engine:
        clock = clock or RealClock()
        broker = EscalationBroker(clock)
        rules_obj = parse_rules(textwrap.dedent(rules), "rules.yaml") if rules else default_rules()
        parsed = parse_script(textwrap.dedent(script), "script.yaml") if script is not None else None
        engine = Engine(rules=rules_obj, broker=broker, clock=clock, script=parsed, workspace=self.workspace)
        if answers is not None:
            self.responder = HeadlessResponder(broker, parse_answers(textwrap.dedent(answers), "answers.yaml"), on_waiting=self.waiting.append)
        return engine

    async def run(
        self, cls: type[WorkflowBase], script: str | None, *, input: str = "", flow: str | None = None,
        rules: str | None = None, answers: str | None = "[]\n", task: str | None = None,
    ) -> RunHandle:
        engine = self.engine(script, rules=rules, answers=answers)
        handle = engine.start_run(CompiledWorkflow(Path("wf.sr"), "wf", cls), flow=flow, input=input, task=task)
        await handle.wait()
        return handle


def run_sr(capsys, tmp_path: Path, source: str, script: str) -> tuple[int, str, list[dict]]:
    (tmp_path / "wf.sr").write_text(source)
    (tmp_path / "s.yaml").write_text(script)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    events = tmp_path / "e.jsonl"
    code = main(["run", str(tmp_path / "wf.sr"), "--script", str(tmp_path / "s.yaml"), "--events", str(events),
                 "--workspace", str(workspace)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, [json.loads(line) for line in events.read_text().splitlines()]


def events(handle: RunHandle, type_: str) -> list[dict[str, Any]]:
    return [e.fields for e in handle.events if e.type == type_]


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path)
