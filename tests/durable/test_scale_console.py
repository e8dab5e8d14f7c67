"""The console with thousands of decisions pending (issue 26: 10,000 runs waiting on people).

Textual asks the app whether each key applies at every bindings refresh; whether the pane's
`b` (a batch of alike decisions) applies compared the decision with every pending one, so a
console listing 10,000 spent minutes in those comparisons before its inbox was full. Counted:
comparisons made, not time.
"""

from __future__ import annotations

import pytest

from engine.escalation import batch
from tests.tui.helpers import SIZE, ask, make_app, make_session, pending, settle
from tui.widgets.decision_pane import DecisionPane

N = 300


async def test_bindings_refreshed_again_do_not_compare_every_pending_decision_again(monkeypatch: pytest.MonkeyPatch) -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        tasks = [ask(session, pending(session.clock, run_id=f"r{n}", timeout=None)) for n in range(N)]
        await settle(pilot)
        assert app.main.query_one(DecisionPane).visible
        compared = [0]
        real = batch._likeness

        def counted(p):  # type: ignore[no-untyped-def]
            compared[0] += 1
            return real(p)

        monkeypatch.setattr(batch, "_likeness", counted)
        for _ in range(20):  # no news meanwhile: what applies has not changed
            app.refresh_bindings()
            await pilot.pause()
        assert app.check_action("batch", ()) is True  # 300 alike decisions: `b` applies
        assert compared[0] <= N + 1, compared[0]
        ask(session, pending(session.clock, run_id="rnew", timeout=None))  # news: asked again, once
        await settle(pilot)
        before = compared[0]
        for _ in range(5):
            app.refresh_bindings()
            await pilot.pause()
        assert compared[0] - before <= N + 2
        for task in tasks:
            task.cancel()
