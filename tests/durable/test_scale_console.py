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


def _count_likeness(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Decisions looked at for their likeness (each comparison of two computes it for both; a
    tally computes it once per decision listed or gone)."""
    looked = [0]
    real = batch.kind_of

    def counted(p):  # type: ignore[no-untyped-def]
        looked[0] += 1
        return real(p)

    monkeypatch.setattr(batch, "kind_of", counted)
    return looked


async def test_bindings_refreshed_again_do_not_compare_every_pending_decision_again(monkeypatch: pytest.MonkeyPatch) -> None:
    session = make_session()
    app = make_app(session)
    async with app.run_test(size=SIZE) as pilot:
        tasks = [ask(session, pending(session.clock, run_id=f"r{n}", timeout=None)) for n in range(N)]
        await settle(pilot)
        assert app.main.query_one(DecisionPane).visible
        compared = _count_likeness(monkeypatch)
        for _ in range(20):  # no news meanwhile: what applies has not changed
            app.refresh_bindings()
            await pilot.pause()
        assert app.check_action("batch", ()) is True  # 300 alike decisions: `b` applies
        assert compared[0] <= N + 100, compared[0]
        ask(session, pending(session.clock, run_id="rnew", timeout=None))  # news: one more counted
        await settle(pilot)
        before = compared[0]
        for _ in range(5):
            app.refresh_bindings()
            await pilot.pause()
        assert compared[0] - before <= 20, compared[0] - before
        for task in tasks:
            task.cancel()


async def test_each_answer_costs_the_batch_check_a_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether `b` applies after an answer was a pass over every pending decision: with 10,000
    pending, half of an answer key's CPU. Counted over 20 answers, one key each."""
    session = make_session()
    app = make_app(session)
    answers = 20
    async with app.run_test(size=SIZE) as pilot:
        tasks = [ask(session, pending(session.clock, run_id=f"r{n}", timeout=None)) for n in range(N)]
        await settle(pilot)
        pane = app.main.query_one(DecisionPane)
        compared = _count_likeness(monkeypatch)
        assert app.check_action("batch", ()) is True  # the first ask counts them all, once
        assert compared[0] <= N + 5, compared[0]
        before = compared[0]
        for n in range(answers):
            shown = pane.pending
            await pilot.press("1")
            await settle(pilot)
            assert session.broker.get(shown.escalation.id) is None  # answered
            assert app.check_action("batch", ()) is True
        # A pass per answer looks at N decisions (6,000 here); a tally at a few each.
        assert compared[0] - before <= 10 * answers, compared[0] - before
        assert len(session.pending()) == N - answers
        for task in tasks:
            task.cancel()


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_the_decisions_waiting_at_open_are_listed_in_one_redraw(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each decision adopted at open was one delivery to the screen, each syncing the whole inbox:
    10,000 waiting made the console's listing quadratic (minutes before `Inbox (10000)`)."""
    from engine.durable.database import Database
    from engine.kernel.clock import RealClock
    from tests.durable.test_scale_polls import _add
    from tests.tui.helpers import wait_until
    from tui.app import EscalateApp

    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    db = Database(db_url)
    _add(db, 0, N)  # N parked runs, each waiting on a person, and N queued ones
    db.close()
    deliveries: list[int] = []
    real = EscalateApp._apply_broker_events

    def counted(self, events):  # type: ignore[no-untyped-def]
        deliveries.append(len(events))
        return real(self, events)

    monkeypatch.setattr(EscalateApp, "_apply_broker_events", counted)
    session = make_session([], clock=RealClock(), db_url=db_url, workspace=tmp_path)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(session.pending()) == N, 60, "every waiting decision listed")
        await settle(pilot)
        assert app.main.query_one("Inbox").border_title == f"Inbox ({N})"
        assert sum(deliveries) == N and len(deliveries) <= 3, deliveries[:10]
        await pilot.press("q")
        await pilot.press("y")
        await pilot.pause()


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_console_reads_the_rows_waiting_at_open_once(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of the decisions pending at open were read twice (the console's own listing and
    the feed's first read, on top of each other), and every parked and queued run once more to
    find the runs to continue (none of them is). Counted: rows read."""
    from engine.durable.database import Database
    from engine.kernel.clock import RealClock
    from tests.durable.test_scale_polls import _add
    from tests.tui.helpers import wait_until

    db_url = f"sqlite:///{tmp_path / 'escalate.db'}"
    db = Database(db_url)
    _add(db, 0, N)  # N parked runs, each waiting on a person, and N queued ones
    db.close()
    read = {"escalations": 0, "runs": 0}

    def counting(name: str, what: str):  # type: ignore[no-untyped-def]
        real = getattr(Database, name)

        def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            rows = real(self, *args, **kwargs)
            read[what] += len(rows)
            return rows

        monkeypatch.setattr(Database, name, counted)

    for name in ("pending_escalations", "pending_among", "escalations_among"):
        counting(name, "escalations")
    counting("list_runs", "runs")
    session = make_session([], clock=RealClock(), db_url=db_url, workspace=tmp_path)
    app = make_app(session, open_engine=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.engine_ready.is_set() and len(session.pending()) == N, 60, "every waiting decision listed")
        await wait_until(pilot, lambda: read["runs"] or not app.workers, 60, "the runs to continue looked for")
        await pilot.pause(2.5)  # the feed's poll (every second) reads ids, not rows
        assert app.main.query_one("Inbox").border_title == f"Inbox ({N})"
        assert read["escalations"] == N, read
        assert read["runs"] == 0, read  # only active runs are candidates: there are none
        await pilot.press("q")
        await pilot.press("y")
        await pilot.pause()
