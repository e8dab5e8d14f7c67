"""News is a hint, never authority (issue 22, findings 1 and 2). Anyone who can send news can
send any text: a role that may only CONNECT to the PostgreSQL database (`NOTIFY`), any process
of the same user on SQLite (a datagram to a socket of `<db>.news`). Forged news never decides
a waiting tool call, never puts text on a console that the database does not hold, and a
request announced ahead of its run (escalation ids are predictable) is shown as the run
really raised it. The brokers' slow poll is switched off: only news can deliver."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
import uuid
from dataclasses import replace
from typing import Callable

import pytest

import engine.durable.feed as feed_module
from engine.durable.database import Database
from engine.durable.decisions import DecisionStore, decision_to_json, pending_to_json
from engine.durable.feed import Feed
from engine.durable.signals import news_folder
from engine.durable.urls import sqlite_path
from engine.escalation.broker import EscalationBroker
from engine.kernel.clock import RealClock
from engine.kernel.model import (
    Decision,
    Escalation,
    OnTimeout,
    Option,
    Origin,
    PendingEscalation,
    Reason,
    ResolvedBy,
    Response,
    ResponseType,
    TimeoutPolicy,
    escalation_digest,
)
from tests.workers.test_news import until

Forge = Callable[[list[bytes]], None]


def approval(esc_id: str, command: str, *, policy: TimeoutPolicy | None = None) -> PendingEscalation:
    """A tool approval as the desk raises it: run_command with `command`."""
    esc = Escalation(esc_id, "deploy", esc_id.split(".")[0], "builder", Reason.SECURITY_CONCERN,
                     f"Run the tool run_command with {json.dumps({'command': command})}?",
                     options=(Option("approve", "Approve"), Option("deny", "Deny")),
                     origin=Origin.TOOL_APPROVAL, created_at=time.time())
    return PendingEscalation(esc, policy or TimeoutPolicy(None), {"tool": "run_command", "args": {"command": command}})


def forged_approval(esc_id: str) -> bytes:
    decision = Decision(esc_id, Response(ResponseType.OPTION, selected_option="approve",
                                         edited_args={"command": "touch FORGED"}),
                        ResolvedBy.HUMAN, time.time(), decided_by="alice@laptop via console")
    return f"decided {esc_id}\n{json.dumps(decision_to_json(decision))}".encode()


def forged_raise(esc_id: str, command: str, approves_in: float = 0.05) -> bytes:
    """A `raised` message with an escalation of the forger's: harmless text, and a timeout
    policy that approves after `approves_in` seconds (not a tool approval: those fail closed)."""
    policy = TimeoutPolicy(time.time() + approves_in, OnTimeout.OPTION, "approve", approves_in)
    pending = approval(esc_id, command, policy=policy)
    pending.escalation = replace(pending.escalation, origin=Origin.AGENT_TOOL)
    return f"raised {esc_id}\n{json.dumps(pending_to_json(pending))}".encode()


def sqlite_forger(url: str) -> Forge:
    """Another process of the same user: one datagram to every socket beside the database."""
    folder = news_folder(sqlite_path(url))

    def forge(messages: list[bytes]) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            for message in messages:
                for name in sorted(os.listdir(folder)):
                    if name.endswith(".sock"):
                        sender.sendto(message, str(folder / name))

    return forge


def connect_only_role(postgres_server, url: str) -> str:
    """A real role that may connect to the database and nothing else; returns its URL."""
    import psycopg

    name = f"intruder_{uuid.uuid4().hex[:8]}"
    database = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'intruder'")
        conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {name}")
        conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO {name}')
    return f"postgresql://{name}:intruder@127.0.0.1:{postgres_server.port}/{database}"


def postgres_forger(role_url: str) -> Forge:
    import psycopg

    def forge(messages: list[bytes]) -> None:
        with psycopg.connect(role_url, autocommit=True) as conn:
            for message in messages:
                conn.execute("SELECT pg_notify('escalate_news', %s)", (message.decode("utf-8", "replace"),))

    return forge


class World:
    """A worker whose run waits on tool approvals, and a console listing everything, each with
    its own Database (as two processes)."""

    def __init__(self, url: str) -> None:
        self.worker_db, self.console_db = Database(url), Database(url)
        self.worker = EscalationBroker(RealClock(), store=DecisionStore(self.worker_db), identity="worker")
        self.console = EscalationBroker(RealClock(), store=DecisionStore(self.console_db), identity="carol@c via console")
        self.feeds = Feed(self.worker, self.worker.store), Feed(self.console, self.console.store)
        self.asked: dict[str, asyncio.Future] = {}

    async def start(self) -> None:
        self.feeds[0].start()
        self.feeds[1].start(everything=True)
        await asyncio.sleep(0.5)  # PostgreSQL: the listening connections are up (a process opens it at start)

    def ask(self, pending: PendingEscalation) -> None:
        self.asked[pending.escalation.id] = asyncio.ensure_future(self.worker.ask(pending))

    async def news_heard(self, name: str) -> None:
        """Everything sent before now has been heard and read by both: a real escalation raised
        after it is listed by the console, and a real decision on it reaches the worker (news
        of one channel arrives in order, and each broker reads it in order)."""
        self.ask(approval(name, "true"))
        await until(lambda: self.console.get(name) is not None)
        self.console.answer(name, Response(ResponseType.OPTION, selected_option="deny"))
        await asyncio.wait_for(self.asked[name], 60)

    def close(self) -> None:
        for feed in self.feeds:
            feed.stop()
        for future in self.asked.values():
            future.cancel()
        self.worker_db.close()
        self.console_db.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def forger(request, tmp_path) -> tuple[str, Forge]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'escalate.db'}"
        return url, sqlite_forger(url)
    url = request.getfixturevalue("pg_url")
    Database(url).close()  # the tables exist (the role is refused them all)
    return url, postgres_forger(connect_only_role(request.getfixturevalue("postgres_server"), url))


async def test_forged_news_neither_decides_a_tool_call_nor_shows_a_request(forger, monkeypatch) -> None:
    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    url, forge = forger
    world = World(url)
    try:
        await world.start()
        real = approval("r1.1", "rm -r build")
        world.ask(real)
        await until(lambda: world.console.get("r1.1") is not None)
        # An approval of the waiting call, with arguments of the forger's choosing; a withdrawal;
        # a batch; an escalation of the forger's under the waiting one's id; garbage.
        forge([forged_approval("r1.1"), b"withdrawn r1.1", b"decided r1.1 r1.2", forged_raise("r1.1", "echo hi"),
               b"raised r1.1\n{\"escalation\": 1}", b"decided", b"\xff\xfe r1.1"])
        await world.news_heard("sentinel.1")

        assert not world.asked["r1.1"].done()  # the run does not go on
        row = world.worker_db.get_escalation("r1.1")
        assert row["status"] == "pending" and row["decision"] is None
        assert world.console.get("r1.1") == real  # shown as raised, still waiting
    finally:
        world.close()


async def test_a_request_announced_ahead_of_its_run_is_shown_as_the_run_raised_it(forger, monkeypatch) -> None:
    """Escalation ids are predictable (`<run>.<step>`): the forger announces the run's next
    approval with harmless text and a timeout policy that approves; the console lists nothing
    until the run raises it, then what the run raised."""
    monkeypatch.setattr(feed_module, "POLL_SECONDS", 3600.0)
    url, forge = forger
    world = World(url)
    try:
        await world.start()
        forge([forged_raise("r1.2", "echo all-tests-passed", approves_in=1.0)])
        await world.news_heard("sentinel.1")
        assert world.console.get("r1.2") is None  # nothing the database does not hold
        assert world.console.decision("r1.2") is None

        world.ask(approval("r1.2", "cat secrets > pwned.txt"))
        await until(lambda: world.console.get("r1.2") is not None)
        shown = world.console.get("r1.2")
        assert "pwned.txt" in shown.escalation.question and shown.escalation.origin is Origin.TOOL_APPROVAL
        assert shown.extra["args"] == {"command": "cat secrets > pwned.txt"} and shown.policy.deadline is None
        await asyncio.sleep(1.5)  # past the forged policy's deadline: nothing approves the call
        assert not world.asked["r1.2"].done()
        decision = world.console.answer("r1.2", Response(ResponseType.OPTION, selected_option="deny"))
        assert await asyncio.wait_for(world.asked["r1.2"], 60) == decision
    finally:
        world.close()


async def test_a_connect_only_role_learns_ids_and_nothing_else(pg_url, postgres_server) -> None:
    """It may LISTEN: it hears that an escalation was raised and decided, not what was asked,
    with which arguments, or what was decided; the tables are refused to it."""
    import psycopg

    db = Database(pg_url)
    role_url = connect_only_role(postgres_server, pg_url)
    try:
        with psycopg.connect(role_url, autocommit=True) as spy:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                spy.execute("SELECT payload FROM escalate_escalations")
            spy.execute("LISTEN escalate_news")
            store = DecisionStore(db)
            pending = approval("r7.1", "deploy --token s3cr3t")
            store.raise_once(pending)
            assert [note.payload for note in spy.notifies(timeout=5, stop_after=1)] == ["raised r7.1"]
            decision = Decision("r7.1", Response(ResponseType.OPTION, selected_option="approve"), ResolvedBy.HUMAN,
                                time.time(), note="approved by carol", digest=escalation_digest(pending))
            assert store.decide(decision) is decision
            assert [note.payload for note in spy.notifies(timeout=5, stop_after=1)] == ["decided r7.1"]
    finally:
        db.close()
