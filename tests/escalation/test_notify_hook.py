"""The rules' `notify: {command: [...]}`: a real program gets each waiting escalation as JSON on
stdin; a missing, failing or hanging one is logged and never breaks the run."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from pathlib import Path

import pytest

from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import FakeClock
from engine.kernel.model import Response, ResponseType
from engine.escalation.notify import notifiers
from engine.escalation.notify.command import CommandNotifier, run_notify_command
from rules.model import NotifyCommand
from tests.escalation.e2e_support import ONE_AGENT, Harness
from tests.tui.helpers import pending

ARCHITECTURE_SCRIPT = """\
agents:
  helper:
    - escalate:
        reason: architecture_decision
        question: "Use JWT? [yes]"
        options: [{id: jwt, label: "Yes, use JWT", recommended: true}]
    - "done"
"""


def _writer(out: Path) -> list[str]:
    """A command that copies its stdin to `out` (written whole, then renamed: never half read)."""
    code = ("import sys, os; data = sys.stdin.buffer.read(); tmp = sys.argv[1] + '.tmp'; "
            "open(tmp, 'wb').write(data); os.replace(tmp, sys.argv[1])")
    return [sys.executable, "-c", code, str(out)]


async def _until(predicate, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        await asyncio.sleep(0.02)


async def test_a_real_run_relays_its_waiting_escalation_as_json(tmp_path: Path) -> None:
    out = tmp_path / "relayed.json"
    command = json.dumps(_writer(out))
    harness = Harness(tmp_path, ONE_AGENT, ARCHITECTURE_SCRIPT, rules=f"notify:\n  command: {command}\n  timeout: 20\n")
    handle = harness.start(task="auth-refactor")
    waiting = await harness.pending()
    await _until(out.exists)
    relayed = json.loads(out.read_text())
    assert relayed["type"] == "human_escalation"
    assert relayed["id"] == waiting.escalation.id
    assert relayed["runId"] == handle.id and relayed["taskId"] == "auth-refactor"
    assert relayed["reason"] == "architecture_decision" and relayed["question"] == "Use JWT? [yes]"
    assert relayed["options"][0]["id"] == "jwt" and relayed["deadline"] is None
    harness.broker.answer(waiting.escalation.id, Response(ResponseType.OPTION, "jwt"))
    await harness.finish(handle)


async def test_an_escalation_answered_at_once_is_not_relayed(tmp_path: Path) -> None:
    out = tmp_path / "relayed.json"
    clock = FakeClock(1000.0)
    broker = EscalationBroker(clock)
    item = pending(clock)
    broker.subscribe(lambda e: broker.answer(e.pending.escalation.id, Response(ResponseType.SKIP)))  # e.g. an answers file
    notifiers(broker).register(CommandNotifier(NotifyCommand(tuple(_writer(out)), 10.0)))
    await broker.ask(item)
    await asyncio.sleep(0.5)
    assert not out.exists()


@pytest.mark.parametrize(
    "command, timeout, expected, logged",
    [
        (["/nonexistent/relay"], 5.0, None, "cannot run '/nonexistent/relay'"),
        ([sys.executable, "-c", "import sys; sys.stderr.write('no token'); sys.exit(3)"], 5.0, 3, "exited with 3: no token"),
        ([sys.executable, "-c", "import time; time.sleep(60)"], 0.5, None, "killed after 0.5s"),
    ],
)
async def test_failures_are_logged_and_bounded(command: list[str], timeout: float, expected: int | None,
                                               logged: str, caplog: pytest.LogCaptureFixture) -> None:
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="escalate.notify"):
        code = await run_notify_command(NotifyCommand(tuple(command), timeout), b"{}\n")
    assert code == expected
    assert logged in caplog.text
    assert time.monotonic() - started < 10  # the hanging one was killed, not waited for


async def test_a_hanging_command_does_not_hold_the_run(tmp_path: Path) -> None:
    hang = json.dumps([sys.executable, "-c", "import time; time.sleep(60)"])
    harness = Harness(tmp_path, ONE_AGENT, ARCHITECTURE_SCRIPT, rules=f"notify:\n  command: {hang}\n  timeout: 30\n")
    handle = harness.start()
    waiting = await harness.pending()
    harness.broker.answer(waiting.escalation.id, Response(ResponseType.OPTION, "jwt"))
    started = time.monotonic()
    await harness.finish(handle, timeout=20)
    assert time.monotonic() - started < 15
    assert handle.result == "done"
