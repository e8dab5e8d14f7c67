"""News between processes sharing a database (PostgreSQL LISTEN/NOTIFY, Unix datagram sockets on
SQLite): a console's broker lists an escalation the moment a worker raises it, removes it the
moment another console decides it, with who decided, and the first answer wins. The brokers'
slow poll is switched off here, so only the news can deliver."""

from __future__ import annotations

import asyncio
import time

import pytest

import engine.durable.feed as feed_module
from engine.durable.database import Database
from engine.durable.decisions import DecisionStore
from engine.durable.feed import Feed
from engine.escalation.broker import RAISED, RESOLVED, AlreadyResolved, BrokerEvent, EscalationBroker
from engine.kernel.clock import RealClock
from engine.kernel.model import Escalation, Option, PendingEscalation, Reason, Response, ResponseType, TimeoutPolicy


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'escalate.db'}"
    return request.getfixturevalue("pg_url")


def pending(esc_id: str) -> PendingEscalation:
    esc = Escalation(esc_id, "deploy", esc_id.split(".")[0], "planner", Reason.ARCHITECTURE_DECISION, "Use JWT?",
                     options=(Option("jwt", "Yes", recommended=True), Option("keep", "No")), created_at=time.time())
    return PendingEscalation(esc, TimeoutPolicy(None))


async def until(condition, timeout: float = 60.0) -> None:  # a hang guard, not a timing
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "the news never arrived"
        await asyncio.sleep(0.005)


async def test_consoles_see_what_others_raise_and_decide_and_the_first_answer_wins(url: str, monkeypatch) -> None:
    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    # One Database each, as in three processes: a worker and two consoles.
    dbs = [Database(url) for _ in range(3)]
    worker, alice, bob = (EscalationBroker(RealClock(), store=DecisionStore(db), identity=name)
                          for db, name in zip(dbs, ("worker", "alice@a via console", "bob@b via console")))
    seen: dict[str, list[BrokerEvent]] = {"alice": [], "bob": []}
    feeds = [Feed(broker, broker.store) for broker in (worker, alice, bob)]
    try:
        feeds[0].start()
        for name, console, console_feed in (("alice", alice, feeds[1]), ("bob", bob, feeds[2])):
            console_feed.start(everything=True)
            console.subscribe(seen[name].append)
        await asyncio.sleep(0.5)  # PostgreSQL: the listening connections are up (a process opens it at start)
        asked = asyncio.ensure_future(worker.ask(pending("r1.1")))
        await until(lambda: alice.get("r1.1") is not None and bob.get("r1.1") is not None)
        assert [e.kind for e in seen["alice"]] == [RAISED] and [e.kind for e in seen["bob"]] == [RAISED]

        won = alice.answer("r1.1", Response(ResponseType.OPTION, selected_option="jwt"))
        with pytest.raises(AlreadyResolved, match=r"already decided by human \(alice@a via console\)"):
            bob.answer("r1.1", Response(ResponseType.OPTION, selected_option="keep"))
        decision = await asyncio.wait_for(asked, 60)
        assert decision == won and decision.decided_by == "alice@a via console"
        assert bob.get("r1.1") is None  # gone from the other console, with who decided
        (resolved,) = [e for e in seen["bob"] if e.kind == RESOLVED]
        assert resolved.elsewhere and resolved.decision.decided_by == "alice@a via console"
    finally:
        for feed in feeds:
            feed.stop()
        for db in dbs:
            db.close()


async def test_a_decision_made_elsewhere_reaches_the_waiting_run_without_a_poll(url: str, monkeypatch) -> None:
    from engine.durable.decisions import decision_from_json
    from engine.kernel.model import escalation_digest

    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    worker_db, shell_db = Database(url), Database(url)
    worker = EscalationBroker(RealClock(), store=DecisionStore(worker_db))
    feed = Feed(worker, worker.store)
    try:
        feed.start()
        await asyncio.sleep(0.5)  # PostgreSQL: the listening connection is up (a process opens it at start)
        raised = pending("r2.1")
        asked = asyncio.ensure_future(worker.ask(raised))
        await asyncio.sleep(0.1)
        answer = {"responseType": "option", "selectedOption": "keep", "resolvedBy": "human",
                  "decidedBy": "carol@c via escalate answer", "digest": escalation_digest(raised)}
        assert shell_db.decide("r2.1", answer, "human", digest=escalation_digest(raised)).won  # what `escalate answer` does
        decision = await asyncio.wait_for(asked, 60)
        assert decision == decision_from_json("r2.1", answer)
    finally:
        feed.stop()
        worker_db.close()
        shell_db.close()


async def test_a_batch_decided_in_one_console_reaches_the_waiting_runs_and_the_other_console(url: str, monkeypatch) -> None:
    """A batch (or a taught rule releasing what waits) is many decisions in one transaction:
    each is news, as a single answer is."""
    from engine.kernel.model import Decision, ResolvedBy

    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    dbs = [Database(url) for _ in range(3)]
    worker, alice, bob = (EscalationBroker(RealClock(), store=DecisionStore(db), identity=name)
                          for db, name in zip(dbs, ("worker", "alice@a via console", "bob@b via console")))
    feeds = [Feed(broker, broker.store) for broker in (worker, alice, bob)]
    try:
        feeds[0].start()
        for console_feed in feeds[1:]:
            console_feed.start(everything=True)
        await asyncio.sleep(0.5)  # PostgreSQL: the listening connections are up
        ids = [f"r{n}.1" for n in range(5)]
        asked = [asyncio.ensure_future(worker.ask(pending(esc_id))) for esc_id in ids]
        await until(lambda: all(alice.get(i) is not None and bob.get(i) is not None for i in ids))
        batch = [Decision(i, Response(ResponseType.OPTION, selected_option="jwt"), ResolvedBy.HUMAN, time.time()) for i in ids]
        applied = alice.apply_many(batch)
        assert [d.escalation_id for d in applied] == ids
        decisions = await asyncio.wait_for(asyncio.gather(*asked), 60)
        assert [d.escalation_id for d in decisions] == ids and {d.decided_by for d in decisions} == {"alice@a via console"}
        await until(lambda: all(bob.get(i) is None for i in ids))  # gone from the other console too
    finally:
        for feed in feeds:
            feed.stop()
        for db in dbs:
            db.close()
