"""Real models over HTTP: a local model server per test, fake keys, runs on the real Engine."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Iterator

import pytest

from engine.escalation.answers import parse_answers
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import RealClock
from engine.escalation.headless import HeadlessResponder
from engine.runtime.engine import Engine, RunHandle
from rules.loader import default_rules, parse_rules
from tests.models.llm_server import ModelServer

FAKE_OPENAI_KEY = "sk-test-not-a-real-key"


@pytest.fixture(autouse=True)
def fake_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may need a real key, nor reach a real provider."""
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_OPENAI_KEY)
    monkeypatch.setenv("GOOGLE_API_KEY", "test-google-key")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("ESCALATE_STREAM", raising=False)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer() as s:
        yield s


def openai_model(server: ModelServer, extra: str = "") -> str:
    return f'model main:\n    provider: openai\n    name: gpt-test\n    base_url: "{server.url}"\n{extra}'


def gemini_model(server: ModelServer) -> str:
    return f'model main:\n    provider: gemini\n    name: gemini-test\n    base_url: "{server.root}"\n'


class RealRun:
    """One workflow run in this process on the real Engine, with headless answers."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.workspace = tmp / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.broker: EscalationBroker | None = None

    async def run(self, source: str, *, rules: str | None = None, answers: str | None = "[]\n",
                  input: str = "go", task: str | None = None) -> RunHandle:
        path = self.tmp / "wf.sr"
        path.write_text(textwrap.dedent(source))
        clock = RealClock()
        self.broker = EscalationBroker(clock)
        rules_obj = parse_rules(textwrap.dedent(rules), "rules.yaml") if rules else default_rules()
        engine = Engine(rules=rules_obj, broker=self.broker, clock=clock, workspace=self.workspace)
        if answers is not None:
            self.responder = HeadlessResponder(self.broker, parse_answers(textwrap.dedent(answers), "answers.yaml"),
                                               on_waiting=lambda *a: None)
        handle = engine.start_run(engine.load(path), input=input, task=task)
        await handle.wait()
        return handle


def fields(handle: RunHandle, type_: str) -> list[dict[str, Any]]:
    return [e.fields for e in handle.events if e.type == type_]


@pytest.fixture
def real(tmp_path: Path) -> RealRun:
    return RealRun(tmp_path)
