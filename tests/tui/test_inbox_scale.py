"""The console listing thousands of pending decisions at once (issue 26: 10,000 runs waiting on
people). Counted, not timed: how often escalation ids are compared, how many inbox rows are made
and how often the inbox's height changes, for N decisions listed in one go. Each grew with N per
decision before (N² in all: 10,000 waiting took 44 s to list).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.kernel.model import Decision, ResolvedBy, Response, ResponseType
from tests.tui.helpers import SIZE, make_app, make_session, pending, settle
from tui.app import EscalateApp
from tui.widgets import inbox as inbox_module
from tui.widgets.inbox import Inbox
from tui.widgets.row_table import RowTable

N = 1500


class CountedId(str):
    """An escalation id that counts the comparisons made with it (a list scanned for an id
    compares it with each element; a dict or set lookup of the same object compares nothing)."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedId.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


async def test_thousands_listed_at_once_cost_each_decision_a_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    deliveries: list[int] = []  # broker events delivered to the screen, per delivery
    real_apply = EscalateApp._apply_broker_events

    def apply(self: EscalateApp, events: list) -> None:  # type: ignore[type-arg]
        deliveries.append(len(events))
        real_apply(self, events)

    monkeypatch.setattr(EscalateApp, "_apply_broker_events", apply)
    session = make_session()
    app = make_app(session)
    made = [0]
    real_cells = inbox_module.inbox_cells

    def cells(*args, **kwargs):  # type: ignore[no-untyped-def]
        made[0] += 1
        return real_cells(*args, **kwargs)

    heights = [0]
    real_changed = RowTable._rows_changed

    def rows_changed(self: RowTable) -> None:
        if isinstance(self, Inbox):
            heights[0] += 1
        real_changed(self)

    monkeypatch.setattr(inbox_module, "inbox_cells", cells)
    monkeypatch.setattr(RowTable, "_rows_changed", rows_changed)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        waiting = []
        for n in range(N):  # as the feed lists what the database holds at a console's open: one loop turn
            p = pending(session.clock, run_id=f"r{n}", timeout=None)
            waiting.append(replace(p, escalation=replace(p.escalation, id=CountedId(p.escalation.id))))
        CountedId.compared = 0
        for p in waiting:
            session.broker.adopt(p)
        await settle(pilot)
        inbox = app.main.query_one(Inbox)
        assert inbox.border_title == f"Inbox ({N})" and inbox.row_count == N
        # Linear work per listing compares ids a few times at most; a list scanned per
        # decision compares them N²/2 times (1.1 million here).
        assert CountedId.compared <= 5 * N, CountedId.compared
        # Rows are made when drawn: those on screen (40 lines), not N.
        assert made[0] <= SIZE[1], made[0]
        assert heights[0] <= 3, heights[0]
        # Scrolling to the end makes the rows that come into view, and only those.
        inbox.focus()
        await pilot.press("end")
        await settle(pilot)
        assert inbox.cursor_key == waiting[-1].escalation.id
        assert made[0] <= 2 * SIZE[1], made[0]
        # All decided by another process (a batch in another console, a script of `escalate
        # answer`): the feed settles them in one loop turn, and the screen is updated once.
        before = len(deliveries)
        for p in waiting:
            session.broker.settle(p.escalation.id, Decision(p.escalation.id, Response(ResponseType.OPTION, "opt1"),
                                                            ResolvedBy.HUMAN, session.clock.now()))
        await settle(pilot)
        assert inbox.row_count == 0 and inbox.border_title == "Inbox (0)"
        assert len(deliveries) - before <= 2, deliveries[before:before + 10]
