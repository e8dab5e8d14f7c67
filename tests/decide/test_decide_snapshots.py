"""Snapshots of the new screens (teach a rule, edit before approving, batch, rules, history with
its audit figures) at 80x24 and 120x40, on a frozen FakeClock. Regenerate after a deliberate
change with `pytest tests/decide --snapshot-update`."""

from __future__ import annotations

import asyncio

import pytest

from engine.kernel.model import Audit, Option, Origin, Reason, Response, ResponseType
from engine.escalation.teaching import propose
from rules import default_rules, parse_rules
from rules.model import Action
from tests.tui.helpers import make_app, make_session, pending
from tui.screens.batch import BatchScreen
from tui.screens.edit_args import EditArgsScreen
from tui.screens.rules import RulesScreen
from tui.screens.teach_rule import TeachRuleScreen

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
TAUGHT = """\
escalationRules:
  taskOverrides:
    deploy-production:
      requireConfirmation: true
      rules:
        - pattern: 're:(?-i)^write_file path: RELEASED\\.txt content: v1$'
          action: allow
          taught: "2026-11-26T09:00:00Z from escalation r1.7"
"""


def _approval(clock, n: int):
    p = pending(clock, task="deploy-production", run_id=f"r{n}", reason=Reason.SECURITY_CONCERN, timeout=None,
                question="Allow deployer to call the tool write_file?",
                context=f'write_file({{"content": "v1", "path": "RELEASED-{n}.txt"}})',
                options=(Option("approve", "Approve: run write_file"), Option("deny", "Deny: refuse this call")),
                origin=Origin.TOOL_APPROVAL, allow_agent_decision=False)
    p.extra.update({"tool": "write_file", "args": {"path": f"RELEASED-{n}.txt", "content": "v1"}})
    return p


def _app_with(count: int = 3):
    session = make_session()
    items = [_approval(session.clock, n) for n in range(1, count + 1)]
    app = make_app(session)
    return app, session, items


async def _raise(session, items, pilot) -> None:
    for item in items:
        asyncio.get_running_loop().create_task(session.broker.ask(item))
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_teach_rule_dialog(snap_compare, size) -> None:
    app, session, items = _app_with()

    async def before(pilot) -> None:
        await _raise(session, items, pilot)
        app.push_screen(TeachRuleScreen(propose(items[0], Action.ALLOW), default_rules(), ".escalate/rules.yaml", 3))
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_edit_args_dialog(snap_compare, size) -> None:
    app, session, items = _app_with(1)

    async def before(pilot) -> None:
        await _raise(session, items, pilot)
        app.push_screen(EditArgsScreen(items[0], lambda args: "ask"))
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_batch_preview(snap_compare, size) -> None:
    app, session, items = _app_with(4)

    async def before(pilot) -> None:
        await _raise(session, items, pilot)
        app.push_screen(BatchScreen(items, session.clock.now() + 125))  # rows 2:05 old
        await pilot.pause(0.2)
        await pilot.press("down", "space")  # the second one left out
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_rules_screen(snap_compare, size) -> None:
    from engine.escalation.desk import rule_key
    from engine.runtime.engine import Engine

    rules = parse_rules(TAUGHT, "taught.yaml")
    app, session, _ = _app_with(0)
    session.engine = Engine(rules=rules, broker=session.broker, clock=session.clock)
    taught = rules.override("deploy-production").rules[0]
    session.engine.desk.hits[rule_key(taught)] = 2

    async def before(pilot) -> None:
        app.push_screen(RulesScreen(session))
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_history_with_audit_figures(snap_compare, size) -> None:
    app, session, items = _app_with(3)

    async def before(pilot) -> None:
        await _raise(session, items, pilot)
        session.clock.advance(12)
        a, b, c = (p.escalation.id for p in items)
        session.answer(a, Response(ResponseType.OPTION, "approve", edited_args={"path": "STAGED.txt"}), Audit(via="console (edited)"))
        session.clock.advance(30)
        session.answer(b, Response(ResponseType.OPTION, "deny"), Audit(via="console"))
        session.answer(c, Response(ResponseType.OPTION, "approve"), Audit(via="console batch of 1 (tool write_file)"))
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=size, run_before=before)
