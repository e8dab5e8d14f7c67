"""ACP tests: the scripted agent (scripted_agent.py, the SDK's agent side) run as a real process
over real pipes, behind a real Engine, broker and desk (in memory)."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from engine.runtime.acp.workflow import agent_source
from engine.escalation.answers import parse_answers
from engine.escalation.broker import EscalationBroker
from engine.escalation.headless import HeadlessResponder
from engine.kernel.clock import RealClock
from engine.runtime.engine import Engine, RunHandle
from rules.loader import default_rules, parse_rules

AGENT = Path(__file__).with_name("scripted_agent.py")


def agent_command(script_path: Path) -> str:
    return shlex.join([sys.executable, str(AGENT), str(script_path)])


class AcpHarness:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.workspace = tmp / "ws"
        self.workspace.mkdir()
        self.trace_path = tmp / "trace.jsonl"
        self.responder: HeadlessResponder | None = None

    def script(self, turns: list[list[dict[str, Any]]], **extra: Any) -> str:
        """The command of a scripted agent playing these turns."""
        path = self.tmp / f"script-{len(list(self.tmp.glob('script-*.json')))}.json"
        path.write_text(json.dumps({"trace": str(self.trace_path), "turns": turns, **extra}))
        return agent_command(path)

    def trace(self) -> list[dict[str, Any]]:
        if not self.trace_path.exists():
            return []
        return [json.loads(line) for line in self.trace_path.read_text().splitlines()]

    def engine(self, *, rules: str | None = None, answers: str | None = None) -> Engine:
        clock = RealClock()
        broker = EscalationBroker(clock)
        if rules is not None:
            rules_file = self.tmp / "rules.yaml"
            rules_file.write_text(textwrap.dedent(rules))
            rules_obj = parse_rules(rules_file.read_text(), str(rules_file))
        else:
            rules_obj = default_rules()
        engine = Engine(rules=rules_obj, broker=broker, clock=clock, workspace=self.workspace)
        if answers is not None:
            self.responder = HeadlessResponder(broker, parse_answers(textwrap.dedent(answers), "answers.yaml"))
        return engine

    def start(self, engine: Engine, command: str, input: str = "do the task", task: str = "acp-task") -> RunHandle:
        source = self.tmp / "agent.sr"
        source.write_text(agent_source(command))
        return engine.start_run(engine.load(source), input=input, task=task)


    def start_sr(self, engine: Engine, source: str, *, script: str | None = None, input: str = "go",
                 task: str = "acp-task") -> RunHandle:
        """Run a workflow written here (dedented); `script`: the ADK agents' scripted replies."""
        from engine.runtime.script import parse_script

        path = self.tmp / "flow.sr"
        path.write_text(textwrap.dedent(source))
        return engine.start_run(engine.load(path), input=input, task=task,
                                script=parse_script(textwrap.dedent(script), "script.yaml") if script else None)


async def raised(engine: Engine, timeout: float = 30) -> Any:
    """The next escalation raised on the engine's broker (a hang guard of `timeout` s)."""
    seen: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    def on_event(event: Any) -> None:
        if event.kind == "raised" and not seen.done():
            seen.set_result(event.pending)

    unsubscribe = engine.broker.subscribe(on_event)
    try:
        pending = engine.broker.pending()
        return pending[0] if pending else await asyncio.wait_for(seen, timeout)
    finally:
        unsubscribe()


def logs(handle: RunHandle) -> list[str]:
    return [str(e.fields.get("message")) for e in handle.events if e.type == "log"]


def events(handle: RunHandle, type_: str) -> list[dict[str, Any]]:
    return [e.fields for e in handle.events if e.type == type_]


@pytest.fixture
def acp(tmp_path: Path) -> AcpHarness:
    return AcpHarness(tmp_path)
