"""An MCP client's question in the console: `escalate_to_human` called through the `mcp`
package's client (a real `escalate mcp` subprocess) is listed in an open console on the same
database, shown in the decision pane, and answered with one key."""

from __future__ import annotations

import asyncio

import pytest

from engine.kernel.clock import RealClock
from tests.outside.mcp_harness import WAIT, Desk, call, question
from tests.tui.helpers import SIZE, make_app, make_session, wait_until
from tui.widgets.decision_pane import DecisionPane

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


async def test_answered_in_the_console_with_one_key(tmp_path) -> None:
    desk = Desk.make(tmp_path)
    session = make_session([], clock=RealClock(), db_url=desk.db_url, workspace=desk.project)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        async with desk.stdio() as client:
            waiting = call(client, desk, **question(requestId="console-1", context="Touches [b]src/api[/b]"))
            await wait_until(pilot, lambda: len(session.pending()) == 1, WAIT, "the MCP question in the inbox")
            (pending,) = session.pending()
            assert (pending.escalation.task_id, pending.escalation.agent) == ("proj", "mcp")
            pane = app.main.query_one(DecisionPane)
            await wait_until(pilot, lambda: pane.pending is not None, 60, "the pane")
            assert pane.pending.escalation.question == "Use JWT instead of sessions?"
            await pilot.press("2")  # the second option
            answer = (await asyncio.wait_for(waiting, WAIT)).structured_content
        await pilot.press("q")
        await pilot.pause()
    assert (answer["responseType"], answer["selectedOption"], answer["resolvedBy"]) == ("option", "opt2", "human")
    (row,) = desk.rows()
    assert (row["status"], row["resolved_by"]) == ("decided", "human")
