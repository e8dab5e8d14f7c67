"""Shared builders for the console tests: sessions on a FakeClock and escalations on its broker."""

from __future__ import annotations

import asyncio
import itertools
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from engine.kernel.clock import FakeClock
from engine.kernel.model import (
    Decision,
    Escalation,
    OnTimeout,
    Option,
    Origin,
    PendingEscalation,
    Reason,
    TimeoutPolicy,
)
from rules import default_rules
from tui.app import EscalateApp
from tui.session import ConsoleSession, WorkflowEntry

_ids = itertools.count(1)
SIZE = (120, 40)


def make_session(workflows: list[Path] | None = None, clock: FakeClock | None = None, **kw) -> ConsoleSession:
    entries = [WorkflowEntry(p, p.with_suffix(".yaml") if p.with_suffix(".yaml").is_file() else None)
               for p in (workflows or [])]
    return ConsoleSession(entries, rules=kw.pop("rules", default_rules()), clock=clock or FakeClock(1000.0), **kw)


def make_app(session: ConsoleSession, **kw) -> EscalateApp:
    return EscalateApp(session, open_engine=kw.pop("open_engine", False), **kw)


def pending(
    clock: FakeClock,
    *,
    task: str = "journalowl-api-fix",
    run_id: str = "r1",
    question: str = "Should I refactor the auth module to use JWT instead of sessions?",
    context: str = "Touches src/api/auth.ts and 5 tests",
    allow_agent_decision: bool = True,
    timeout: float | None = 120,
    on_timeout: OnTimeout = OnTimeout.WAIT,
    reason: Reason = Reason.ARCHITECTURE_DECISION,
    options: tuple[Option, ...] = (
        Option("opt1", "Yes, use JWT", recommended=True),
        Option("opt2", "No, keep sessions"),
    ),
    origin: Origin = Origin.AGENT_TEXT,
) -> PendingEscalation:
    now = clock.now()
    esc = Escalation(
        id=f"esc{next(_ids)}", task_id=task, run_id=run_id, agent="planner", reason=reason,
        question=question, context=context, options=options, allow_agent_decision=allow_agent_decision,
        timeout=timeout, origin=origin, created_at=now,
    )
    deadline = now + timeout if timeout is not None else None
    return PendingEscalation(esc, TimeoutPolicy(deadline, on_timeout, timeout_seconds=timeout))


def ask(session: ConsoleSession, p: PendingEscalation) -> "asyncio.Task[Decision]":
    """The agent side: await the broker's future in a task, as a paused run does."""
    return asyncio.get_running_loop().create_task(session.broker.ask(p))


async def settle(pilot, rounds: int = 3) -> None:
    for _ in range(rounds):
        await pilot.pause()


async def decided(task: "asyncio.Task[Decision]", timeout: float = 60.0) -> Decision:
    """The asker's decision; a test fails (never hangs) when it does not come (a hang guard, generous:
    CI's 2 cores run 4 test processes and their subprocesses)."""
    return await asyncio.wait_for(asyncio.shield(task), timeout)


async def wait_until(pilot, predicate, timeout: float = 60.0, what: str = "condition") -> None:
    """Let the app and its runs work until `predicate()` holds; fail after `timeout` seconds (a hang
    guard, never a timing)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)
    await pilot.pause()


def demo_session(workspace: Path, clock: FakeClock | None = None) -> ConsoleSession:
    """The bundled demo workspace on the real engine, tools confined to `workspace`."""
    from engine.demo import demo_rules, demo_workflows
    from rules import load_rules

    return make_session(demo_workflows(), clock=clock, rules=load_rules(demo_rules()), workspace=workspace)


@asynccontextmanager
async def demo_console(workspace: Path) -> AsyncIterator[tuple[ConsoleSession, EscalateApp, object]]:
    """The demo console on the real engine, its runtime loaded: (session, app, pilot)."""
    session = demo_session(workspace)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, app.engine_ready.is_set, 60, "the engine")
        yield session, app, pilot


def entry(session: ConsoleSession, name: str) -> WorkflowEntry:
    return next(e for e in session.workflows if e.name == name)
