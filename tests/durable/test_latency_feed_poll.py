"""A console's feed with many escalations listed (the poll of engine/durable/feed.py): opening on
more than READ_AT_MOST pending rows lists them all from one read of every pending row, and a
poll with no news drops those decided elsewhere and lists those raised elsewhere, from the ids
pending in the database (no query naming every listed id)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import sqlalchemy as sa

from engine.durable.database import Database, escalations
from engine.durable.decisions import DecisionStore, pending_to_json
from engine.durable.feed import READ_AT_MOST, Feed
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import RealClock
from engine.kernel.model import Escalation, Option, PendingEscalation, Reason, TimeoutPolicy, escalation_digest


def _rows(first: int, count: int) -> list[dict]:
    now = time.time()
    rows = []
    for i in range(first, first + count):
        run = f"r{i:08x}"
        esc = Escalation(f"{run}.2", "wait", run, "asker", Reason.ARCHITECTURE_DECISION, f"Keep API {i}?",
                         options=(Option("keep", "Keep it", recommended=True), Option("drop", "Drop it")), created_at=now)
        pending = PendingEscalation(esc, TimeoutPolicy(None))
        rows.append({"id": esc.id, "run_id": run, "created": now + i * 1e-6, "deadline": None,
                     "payload": json.dumps(pending_to_json(pending)), "status": "pending",
                     "digest": escalation_digest(pending)})
    return rows


async def _until(condition, what: str) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out: {what}")


async def test_a_console_lists_thousands_and_its_poll_follows_the_database(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'e.db'}")
    many = READ_AT_MOST * 2 + 7
    with db.engine.begin() as c:
        c.execute(escalations.insert(), _rows(0, many))
    store = DecisionStore(db)
    broker = EscalationBroker(RealClock(), store=store, identity="test console")
    feed = Feed(broker, store)
    try:
        feed.start(everything=True)
        await _until(lambda: len(broker.waiting_ids()) == many, "every pending row listed")
        assert sorted(broker.waiting_ids()) == sorted(r["id"] for r in _rows(0, many))
        # Elsewhere, with no news: two decided, one withdrawn, three raised.
        decided = [f"r{i:08x}.2" for i in (3, many - 1)]
        with db.engine.begin() as c:
            c.execute(escalations.update().where(escalations.c.id.in_(decided))
                      .values(status="decided", resolved_by="human", decided_at=time.time(),
                              decision=json.dumps({"responseType": "option", "selectedOption": "keep",
                                                   "resolvedBy": "human", "resolvedAt": time.time()})))
            c.execute(escalations.update().where(escalations.c.id == "r00000005.2").values(status="withdrawn"))
            c.execute(escalations.insert(), _rows(many, 3))
        expected = {r["id"] for r in _rows(0, many + 3)} - set(decided) - {"r00000005.2"}
        await _until(lambda: set(broker.waiting_ids()) == expected, "the poll following the database")
        assert all(broker.known(esc_id) and broker.get(esc_id) is None for esc_id in decided)
    finally:
        feed.stop()
        db.close()


async def test_caught_up_returns_once_what_was_heard_is_read_though_news_keeps_coming(tmp_path: Path) -> None:
    """A console waits for its first read before DBOS launches: that wait ends with the read of
    what was pending, even while other processes keep sending news (a busy database)."""
    db = Database(f"sqlite:///{tmp_path / 'e.db'}")
    many = READ_AT_MOST + 10
    with db.engine.begin() as c:
        c.execute(escalations.insert(), _rows(0, many))
    store = DecisionStore(db)
    broker = EscalationBroker(RealClock(), store=store, identity="test console")
    feed = Feed(broker, store)
    talking = True

    async def chatter() -> None:  # news of rows that do not exist, as fast as the loop turns
        n = 0
        while talking:
            db.signals.committed(f"raised nothing{n}")
            n += 1
            await asyncio.sleep(0)

    chat = asyncio.get_running_loop().create_task(chatter())
    try:
        await asyncio.sleep(0.1)
        feed.start(everything=True)
        await asyncio.wait_for(feed.caught_up(), 60)
        assert len(broker.waiting_ids()) == many  # listed when it returns
    finally:
        talking = False
        await chat
        feed.stop()
        db.close()
