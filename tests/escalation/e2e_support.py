"""Real runs for the escalation end-to-end tests: a .sr file and a script in a temp folder,
the real Engine (ADK runners with the scripted model), a real broker on a FakeClock."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import FakeClock
from engine.kernel.model import PendingEscalation
from engine.runtime.engine import Engine, RunHandle
from engine.runtime.script import parse_script
from rules import default_rules, parse_rules

ONE_AGENT = """\
streetrace v1

model main = anthropic/claude-sonnet-4

prompt helper_instructions: \"\"\"You help with the change.\"\"\"

agent helper:
    instruction helper_instructions

flow main:
    $out = run agent helper $input
    return $out
"""

TOOL_AGENT = """\
streetrace v1

model main = anthropic/claude-sonnet-4

tool fs = builtin streetrace.fs

prompt helper_instructions: \"\"\"You write files.\"\"\"

agent helper:
    tools fs
    instruction helper_instructions

flow main:
    $out = run agent helper $input
    return $out
"""


class Harness:
    def __init__(self, tmp: Path, source: str, script: str, rules: str | None = None) -> None:
        self.tmp = tmp
        self.clock = FakeClock()
        self.broker = EscalationBroker(self.clock)
        self.sr = tmp / "flow.sr"
        self.sr.write_text(source)
        self.workspace = tmp / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.engine = Engine(
            rules=parse_rules(rules, "rules.yaml") if rules else default_rules(),
            broker=self.broker,
            clock=self.clock,
            script=parse_script(textwrap.dedent(script), "script.yaml"),
            workspace=self.workspace,
        )

    def start(self, task: str = "task", input: str = "go") -> RunHandle:
        return self.engine.start_run(self.engine.load(self.sr), input=input, task=task)

    async def pending(self, timeout: float = 30.0) -> PendingEscalation:
        """Wait (real time: ADK runs on the loop) until an escalation is pending."""
        for _ in range(int(timeout / 0.01)):
            items = self.broker.pending()
            if items:
                return items[0]
            await asyncio.sleep(0.01)
        raise AssertionError("no escalation was raised")

    @staticmethod
    async def finish(handle: RunHandle, timeout: float = 60.0) -> Any:
        await asyncio.wait_for(handle.wait(), timeout)
        return handle.status

    @staticmethod
    def events(handle: RunHandle, type_: str) -> list[dict[str, Any]]:
        return [e.fields for e in handle.events if e.type == type_]
