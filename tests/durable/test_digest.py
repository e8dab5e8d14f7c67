"""A decision is bound to what its decider saw (issue 22): it carries the digest of the request
as shown, the database applies it only while the row holds that request, the person is told
when it changed (and sees it again), a run never carries out a decision made on another request
than the one it raised, and the audit keeps the digest. Real SQLite files, real processes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace

import pytest

import engine.durable.feed as feed_module
from engine.durable.database import Database
from engine.durable.decisions import DecisionStore
from engine.durable.feed import Feed
from engine.escalation.audit import audit_record
from engine.escalation.broker import RAISED, EscalationBroker, EscalationError, RequestChanged
from engine.kernel.clock import RealClock
from engine.kernel.model import (
    Decision,
    EscalationRecord,
    ResolvedBy,
    Response,
    ResponseType,
    escalation_digest,
)
from tests.workers.test_forged_news import approval
from tests.workers.test_news import until

APPROVE = Response(ResponseType.OPTION, selected_option="approve")


@pytest.fixture
def db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'escalate.db'}")
    yield database
    database.close()


def test_a_decision_on_another_request_than_the_row_holds_is_refused(db) -> None:
    store = DecisionStore(db)
    real, shown = approval("r1.1", "rm -r victim"), approval("r1.1", "echo all-tests-passed")
    store.raise_once(real)
    on_shown = Decision("r1.1", APPROVE, ResolvedBy.HUMAN, time.time(), digest=escalation_digest(shown))
    with pytest.raises(RequestChanged, match="r1.1 changed since it was shown"):
        store.decide(on_shown)
    (held,) = store.decide_many([on_shown])
    assert isinstance(held, RequestChanged)
    row = db.get_escalation("r1.1")
    assert row["status"] == "pending" and row["decision"] is None  # nothing half-applied

    on_real = replace(on_shown, digest=escalation_digest(real))
    assert store.decide(on_real) is on_real
    assert db.get_escalation("r1.1")["decision"]["digest"] == escalation_digest(real)
    (decided,) = store.settled(["r1.1"])
    assert audit_record(EscalationRecord(real, decided[1]))["digest"] == escalation_digest(real)


def test_the_digest_covers_what_the_pane_shows() -> None:
    base = approval("r1.1", "ls")
    changed = [
        approval("r1.1", "ls; rm -r ~"),
        replace(base, escalation=replace(base.escalation, question="Run it?")),
        replace(base, escalation=replace(base.escalation, context="harmless")),
        replace(base, escalation=replace(base.escalation, options=base.escalation.options[:1])),
        replace(base, extra={"tool": "write_file", "args": {"command": "ls"}}),
    ]
    assert len({escalation_digest(p) for p in [base, *changed]}) == 1 + len(changed)
    later = replace(base, escalation=replace(base.escalation, created_at=base.escalation.created_at + 60))
    assert escalation_digest(later) == escalation_digest(base)  # asked again after a restart: the same request


async def test_a_console_answering_what_it_showed_is_told_the_request_changed_and_shown_it_again(db, monkeypatch) -> None:
    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    real = approval("r1.1", "rm -r victim")
    DecisionStore(db).raise_once(real)
    console = EscalationBroker(RealClock(), store=DecisionStore(db), identity="carol@c via console")
    feed = Feed(console, console.store)
    try:
        feed.start(everything=True)
        await until(lambda: console.get("r1.1") is not None)
        stale = approval("r1.1", "echo all-tests-passed")  # what the screen held
        with pytest.raises(RequestChanged):
            console.answer("r1.1", APPROVE, seen=stale)
        assert db.get_escalation("r1.1")["status"] == "pending" and console.get("r1.1") == real
        decision = console.answer("r1.1", APPROVE, seen=console.get("r1.1"))
        assert decision.digest == escalation_digest(real) and db.get_escalation("r1.1")["status"] == "decided"
    finally:
        feed.stop()


async def test_a_run_never_carries_out_a_decision_made_on_another_request(db, monkeypatch) -> None:
    """A row written ahead of the run under its next id (the same user can write a SQLite file):
    the console lists and approves that row; the run, which raised another request under the
    id, refuses the decision rather than run its own command unseen."""
    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    DecisionStore(db).raise_once(approval("r1.1", "echo all-tests-passed"))
    worker_db = Database(db.url)
    worker = EscalationBroker(RealClock(), store=DecisionStore(worker_db))
    console = EscalationBroker(RealClock(), store=DecisionStore(db), identity="carol@c via console")
    feeds = Feed(worker, worker.store), Feed(console, console.store)
    try:
        feeds[0].start()
        feeds[1].start(everything=True)
        await until(lambda: console.get("r1.1") is not None)
        asked = asyncio.ensure_future(worker.ask(approval("r1.1", "rm -r victim")))
        await asyncio.sleep(0.05)
        console.answer("r1.1", APPROVE, seen=console.get("r1.1"))
        with pytest.raises(EscalationError, match="decided on another request than this run raised"):
            await asyncio.wait_for(asked, 60)
    finally:
        for feed in feeds:
            feed.stop()
        worker_db.close()


async def test_a_listed_request_whose_row_differs_is_listed_again_as_held(db, monkeypatch) -> None:
    """A console running a run lists the request as the run raised it; when the database holds
    another (a row written first under that id), a decision on the listed one is refused, and
    the row is what the console then shows (subscribers hear it raised again)."""
    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    planted = approval("r1.1", "echo all-tests-passed")
    DecisionStore(db).raise_once(planted)
    console = EscalationBroker(RealClock(), store=DecisionStore(db), identity="carol@c via console")
    feed = Feed(console, console.store)
    events = []
    try:
        feed.start()
        asked = asyncio.ensure_future(console.ask(approval("r1.1", "rm -r victim")))
        await until(lambda: console.get("r1.1") is not None)
        console.subscribe(events.append)
        with pytest.raises(RequestChanged):
            console.answer("r1.1", APPROVE)
        await until(lambda: console.get("r1.1") == planted)
        assert [e.kind for e in events] == [RAISED] and not asked.done()
        asked.cancel()
    finally:
        feed.stop()


def escalate(cwd, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_escalate_answer_on_a_request_that_changed_exits_1_and_decides_nothing(tmp_path, db) -> None:
    DecisionStore(db).raise_once(approval("r1.1", "echo all-tests-passed"))
    with sqlite3.connect(tmp_path / "escalate.db") as conn:  # the row no longer holds what was raised
        (payload,) = conn.execute("SELECT payload FROM escalate_escalations WHERE id = 'r1.1'").fetchone()
        conn.execute("UPDATE escalate_escalations SET payload = ? WHERE id = 'r1.1'",
                     (payload.replace("echo all-tests-passed", "rm -r victim"),))
    done = escalate(tmp_path, "answer", "r1.1", "--approve", "--db", db.url)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "r1.1: the request changed since it was read: nothing was decided; look at it again (escalate runs) and answer again"]
    assert db.get_escalation("r1.1")["status"] == "pending"


def test_a_database_made_before_digests_opens_and_its_requests_can_be_decided(tmp_path) -> None:
    path = tmp_path / "escalate.db"
    Database(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:  # the tables as the version before digests made them, with a request waiting
        conn.execute("ALTER TABLE escalate_escalations DROP COLUMN digest")
        conn.execute("DROP TABLE escalate_schema")  # nor had it a schema version
        payload = json.dumps({"escalation": {"id": "r0.1", "task_id": "t", "run_id": "r0", "agent": "a",
                                             "reason": "other", "question": "Go?", "options": [{"id": "approve", "label": "Approve"},
                                                                                               {"id": "deny", "label": "Deny"}],
                                             "origin": "tool_approval"},
                              "policy": {"deadline": None, "on_timeout": "wait"}, "extra": {}})
        conn.execute("INSERT INTO escalate_escalations (id, run_id, created, payload, status) VALUES ('r0.1', 'r0', 1.0, ?, 'pending')",
                     (payload,))
    done = escalate(tmp_path, "answer", "r0.1", "--approve", "--db", f"sqlite:///{path}")
    assert done.returncode == 0, done.stderr
    db = Database(f"sqlite:///{path}")
    try:
        assert db.get_escalation("r0.1")["status"] == "decided"
    finally:
        db.close()
