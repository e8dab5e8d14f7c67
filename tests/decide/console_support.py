"""A console on the real engine with a tool workflow whose every call needs approval, the rules
in a file of the test's own (taught rules go there)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from rules import load_rules
from rules.book import RuleBook
from tests.escalation.e2e_support import TOOL_AGENT
from tests.tui.helpers import SIZE, make_app, make_session, wait_until
from tui.session import RunRequest

SCRIPT = """\
agents:
  helper:
    - tool: write_file
      args: {path: "RELEASED.txt", content: "v1.4.2"}
    - text: "refused"
      when: "on the edited arguments"
    - text: "denied"
      when: "denied"
    - "written"
"""

RULES = """\
# the test's rules: every tool call of the `deploy` task needs a person
escalationRules:
  taskOverrides:
    deploy:
      requireConfirmation: true   # keep this comment
"""


def workspace(tmp: Path) -> tuple[Path, Path, Path]:
    """(deploy.sr, rules.yaml, ws): the workflow (its script beside it), its rules, its workspace."""
    sr = tmp / "deploy.sr"
    sr.write_text(TOOL_AGENT)
    sr.with_suffix(".yaml").write_text(SCRIPT)
    rules = tmp / "rules.yaml"
    rules.write_text(RULES)
    ws = tmp / "ws"
    ws.mkdir()
    return sr, rules, ws


@asynccontextmanager
async def tool_console(tmp: Path, size: tuple[int, int] = SIZE) -> AsyncIterator[tuple]:
    sr, rules, ws = workspace(tmp)
    session = make_session([sr], rules=load_rules(rules), workspace=ws, rule_book=RuleBook(explicit=rules))
    app = make_app(session, open_engine=True)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        yield session, app, pilot


def start(app, session, count: int) -> list:
    return [app.start(session.workflows[0], RunRequest(None, "go")) for _ in range(count)]


async def waiting(pilot, session, count: int) -> None:
    await wait_until(pilot, lambda: len(session.pending()) >= count, 30, f"{count} pending decisions")
