"""A countdown for any finite timeout reads as words, however large (an agent may ask 1e300 s)."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from engine.kernel.model import OnTimeout, Reason
from tests.tui.helpers import SIZE, ask, make_app, make_session, pending, settle
from tests.tui.test_pane import screen_lines
from tui.format import duration


@pytest.mark.parametrize("timeout", [1e300, 1e20, 100 * 365 * 24 * 3600])
async def test_a_huge_timeout_counts_down_in_words(timeout: float) -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        ask(session, pending(session.clock, allow_agent_decision=False, timeout=timeout, on_timeout=OnTimeout.STOP,
                             reason=Reason.TEST_FAILURE))
        await settle(pilot)
        line = "No answer in more than 100 years → the task stops"
        assert str(app.main.query_one("#pane-countdown", Static).render()) == line
        assert line in "\n".join(screen_lines(app))


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (59.9, "59s"), (60, "1:00"), (3599, "59:59"), (3600, "1:00:00"), (86399, "23:59:59"),
    (86400, "1d 0:00:00"), (90061, "1d 1:01:01"), (1e9, "11574d 1:46:40"), (3.2e9, "more than 100 years"),
    (float("inf"), "more than 100 years"), (float("nan"), "0s"), (-5, "0s"), (float("-inf"), "0s"),
])
def test_durations_stay_short(seconds: float, text: str) -> None:
    assert duration(seconds) == text
