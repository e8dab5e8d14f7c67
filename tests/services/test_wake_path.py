"""The way of a decision to its run, counted (issue 26: answer given -> next turn): where the
news is read, what a parked run's wake reads and how often, and which of its statements are
compiled at the wake. Real SQLite files, DBOS, the real workflow of the worker tests; the
decision written by a store of its own (another `Database` on the file, as `escalate answer`
writes it: its news reaches the services' listening socket)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from engine.durable.database import Database
from engine.durable.decisions import DecisionStore
from engine.kernel.model import Decision, ResolvedBy, escalation_digest
from engine.runtime.engine import RunStatus
from engine.services import open_services
from tests.pg_server import serving
from tests.services.test_live_parking import parked, until
from tests.workers.procs import ASK, ASK_SCRIPT, answer_for, expected_result


def decide_elsewhere(url: str, esc_id: str) -> None:
    """As `escalate answer` does: the row decided by another connection, news sent after the commit."""
    from engine.durable.decisions import pending_from_json

    other = Database(url)
    try:
        row = other.get_escalation(esc_id)
        pending = pending_from_json(row["payload"])
        decision = Decision(esc_id, answer_for(row), ResolvedBy.HUMAN, 0.0, digest=escalation_digest(pending))
        assert DecisionStore(other).decide(decision) is decision
    finally:
        other.close()


@pytest.fixture(scope="module")
def postgres_server():
    yield from serving()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path: Path) -> str:
    """The news differs (a datagram on SQLite, NOTIFY on PostgreSQL); the way is the same."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return request.getfixturevalue("postgres_server").new_database()


async def open_run(tmp_path: Path, url: str | None = None) -> tuple[Any, Any, str]:
    from engine.runtime.script import load_script
    from rules import load_rules

    url = url or f"sqlite:///{tmp_path / 'runs.db'}"
    services = await open_services(url, identity="run", resumes=False)
    engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(ASK_SCRIPT))
    return services, engine.start_run(engine.load(ASK), input="go"), url


def question(services: Any, handle: Any, number: int) -> str | None:
    """The id of the run's `number`th question, once it waits on it (read from the broker: no
    statement of the test's own among those counted)."""
    pending = [p.escalation.id for p in services.broker.pending() if p.escalation.run_id == handle.id]
    if not pending:
        return None
    asked = handle.__dict__.setdefault("asked_in_test", [])
    if pending[0] not in asked:
        asked.append(pending[0])
    return pending[0] if asked.index(pending[0]) + 1 == number else None


async def test_news_of_a_decision_is_read_on_the_listening_thread_once(tmp_path: Path, url: str, monkeypatch) -> None:
    """A run held live: the rows a decision's news names are read by the thread that heard it
    (before: the loop handed the read to a pool thread and waited for it, a hop there and back),
    once, and the run goes on with it."""
    reads: list[tuple[str, list[str]]] = []
    read = DecisionStore.read

    def counted(self: DecisionStore, esc_ids: Any) -> Any:
        ids = list(esc_ids)
        reads.append((threading.current_thread().name, ids))
        return read(self, ids)

    monkeypatch.setattr(DecisionStore, "read", counted)
    services, handle, url = await open_run(tmp_path, url)
    try:
        await until(lambda: question(services, handle, 1) is not None, "the first question")
        esc_id = question(services, handle, 1)
        assert esc_id is not None and not handle.parked
        await asyncio.sleep(0.2)  # the feed's own first read of this id, if any, done
        reads.clear()
        await asyncio.to_thread(decide_elsewhere, url, esc_id)
        await until(lambda: question(services, handle, 2) is not None, "the run at its second question")
        assert reads == [("escalate-listen", [esc_id])]
        decide_elsewhere(url, question(services, handle, 2))
        assert await asyncio.wait_for(handle.wait(), 120) is RunStatus.DONE
        assert handle.result == expected_result(handle.id)
    finally:
        services.close()


@pytest.fixture
def park_soon(monkeypatch) -> None:
    monkeypatch.setattr("engine.services.parking.PARK_LIVE_AFTER", 0.2, raising=False)


class Statements:
    """Every statement executed on an engine, with whether SQLAlchemy compiled it then."""

    def __init__(self, engine: sa.Engine | None) -> None:
        self.seen: list[tuple[str, bool]] = []
        self.on = False
        if engine is not None:  # DBOS's own engine (PostgreSQL) is not the database's: not counted
            sa.event.listen(engine, "before_cursor_execute", self._before)

    def _before(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if self.on:
            self.seen.append((" ".join(statement.split()), context.cache_hit == context.dialect.CACHE_MISS))


async def parked_then_decided(tmp_path: Path, url: str | None = None) -> tuple[Any, Any, Statements, Statements]:
    """A run parked in its process, decided by another store: the statements of escalate's
    engine and of DBOS's from the decision to the run's next question."""
    services, handle, url = await open_run(tmp_path, url)
    ours, dbos = Statements(services.db.engine), Statements(services.db.dbos_engine())
    await until(lambda: question(services, handle, 1) is not None and parked(services, handle.id), "the run parked")
    await asyncio.sleep(0.5)  # what parking does meanwhile (its warm-up included) is done
    ours.on = dbos.on = True
    await asyncio.to_thread(decide_elsewhere, url, question(services, handle, 1))
    await until(lambda: question(services, handle, 2) is not None, "the run at its second question")
    ours.on = dbos.on = False
    return services, handle, ours, dbos


def _reads(statements: Statements, table: str, where: str) -> list[str]:
    return [s for s, _ in statements.seen if s.startswith("SELECT") and f"FROM {table} WHERE {where}" in s]


@pytest.mark.usefixtures("park_soon")
async def test_a_parked_runs_wake_reads_its_row_and_its_questions_once(tmp_path: Path, url: str) -> None:
    """Taken back on its decision: the look at what is still pending is part of the claim (one
    conditional statement), and the execution does not read the run's row to learn whether it
    is over (it was just claimed here). Before: a read of its pending questions, then the
    claim, then that read of its row."""
    services, handle, ours, _ = await parked_then_decided(tmp_path, url)
    try:
        assert _reads(ours, "escalate_escalations", "escalate_escalations.run_id") == []
        assert len(_reads(ours, "escalate_runs", "escalate_runs.run_id")) == 1  # the workflow it runs (_from_row)
        assert len([s for s, _ in ours.seen if "FROM escalate_steps" in s]) == 1  # its recorded steps, once
        claims = [s for s, _ in ours.seen if s.startswith("UPDATE escalate_runs SET status=") and ", owner=" in s.split(" WHERE ")[0]]
        assert len(claims) == 1 and "EXISTS" in claims[0]
        decide_elsewhere(str(services.db.url), question(services, handle, 2))
        assert await asyncio.wait_for(handle.wait(), 120) is RunStatus.DONE
        assert handle.result == expected_result(handle.id)
    finally:
        services.close()


@pytest.mark.usefixtures("park_soon")
async def test_a_parked_runs_wake_finds_its_statements_compiled(tmp_path: Path) -> None:
    """The statements of the wake were compiled while the run was parked (once a process): the
    news's read, the claim, the steps' read, DBOS's resume, the take's read, the statuses' read.
    What is left compiled at the wake is DBOS's claim of the take, which DBOS makes only when
    its read found a workflow."""
    services, handle, ours, dbos = await parked_then_decided(tmp_path)
    try:
        wake = ("FROM escalate_escalations WHERE escalate_escalations.id IN", "UPDATE escalate_runs SET status",
                "FROM escalate_steps", "FROM sqlite_master")
        compiled = [s for s, cold in ours.seen if cold and any(part in s for part in wake)]
        assert compiled == []
        # DBOS's own polls (its internal queue's, once a second: it asks for the latest version,
        # the take does not; its delayed workflows') may compile theirs in this window.
        cold = [s for s, miss in dbos.seen if miss and "workflow_status" in s
                and "application_version IS NULL" not in s and "delay_until_epoch_ms <=" not in s]
        assert len(cold) == 1 and cold[0].startswith("UPDATE main.workflow_status SET status=?, executor_id=?"), cold
        decide_elsewhere(str(services.db.url), question(services, handle, 2))
        assert await asyncio.wait_for(handle.wait(), 120) is RunStatus.DONE
    finally:
        services.close()


def test_a_decision_is_written_by_a_statement_nobody_compiles(tmp_path: Path) -> None:
    """`escalate answer` decides once in its life: its update is the driver's own SQL, not a
    statement SQLAlchemy compiles at that first execution (~1.5 ms of the 2.2 its decision
    took, in the time from the decision to the run's next turn). The same first-writer-wins
    update: a second decision loses to it, and the row keeps the first."""
    from engine.kernel.model import Escalation, Option, OnTimeout, PendingEscalation, Reason, TimeoutPolicy

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    db = Database(url)
    try:
        store = DecisionStore(db)
        esc = Escalation(id="r1.2", task_id="t", run_id="r1", agent="a", reason=Reason.parse("architecture_decision"),
                         question="Go on?", options=(Option("go", "Go"), Option("stop", "Stop")), created_at=1.0)
        pending = PendingEscalation(esc, TimeoutPolicy(None, OnTimeout.RECOMMENDED), {})
        store.raise_once(pending)
        compiled: list[str] = []

        def seen(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
            if context.compiled is not None:
                compiled.append(statement)

        sa.event.listen(db.engine, "before_cursor_execute", seen)
        first = Decision("r1.2", answer_for({"payload": db.get_escalation("r1.2")["payload"]}), ResolvedBy.HUMAN, 2.0,
                         digest=escalation_digest(pending))
        compiled.clear()
        assert store.decide(first) is first
        assert compiled == []
        late = Decision("r1.2", first.response, ResolvedBy.TIMEOUT_DEFAULT, 3.0, digest=escalation_digest(pending))
        assert store.decide(late) == first  # the first writer's, read back
        assert db.get_escalation("r1.2")["resolved_by"] == "human"
    finally:
        db.close()
