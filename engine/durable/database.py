"""The one database: runs, their escalations (pending, decided, withdrawn) and their events.

SQLAlchemy Core on SQLite (the default, a file under `.escalate/`) or PostgreSQL: nothing here is
SQLite-only. DBOS keeps its own tables (workflows, recorded steps) in the same database. The
database is the truth for decisions: `decide` is a conditional update, so whoever writes first
wins, across threads, processes and hosts, and the others are told who decided.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar

import sqlalchemy as sa

from engine.durable import rows as checked
from engine.durable.migrations import CREATE_LOCK_KEY, VERSION_TABLE, prepare
from engine.durable.settings import seconds
from engine.durable.urls import DatabaseError, engine_url, resolve_url, shown, sqlite_path
from engine.private import create_private_file, make_folders

if TYPE_CHECKING:
    from engine.durable.loop_write import LoopWriter

__all__ = ["CREATE_LOCK_KEY", "Database", "DatabaseError", "resolve_url", "sqlite_path"]

log = logging.getLogger("escalate.durable")
T = TypeVar("T")

# Statuses a run row can have: the engine's RunStatus values, plus "interrupted" (derived, never
# stored: an active run whose owner stopped beating).
ACTIVE = ("running", "waiting")
QUEUED = "queued"  # `run --detach`: waiting in the workers' queue, owned by nobody yet
# Waiting for a person with no process holding it (a worker's run): rows only, until a decision
# puts it back on the workers' queue (engine/durable/parking.py).
PARKED = "parked"
HEARTBEAT_SECONDS = 2.0
# How long the events writer gathers a batch: other processes (a console showing the run) see a
# run's events this much later; the run's own row changes write them at once (update_run).
EVENTS_LINGER = 0.05
# An owner silent this long is gone: its runs are interrupted. Less than two beats would take a
# live process's runs between them.
STALE_AFTER = seconds("ESCALATE_STALE_AFTER", 10.0, least=2 * HEARTBEAT_SECONDS)
ESCALATION_ID_MAX = 96  # the escalations table's id column: a longer id names no row

# Escalate's tables at schema version migrations.CURRENT: a change to one is a migration there too.
metadata = sa.MetaData()

runs = sa.Table(
    "escalate_runs", metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("task", sa.Text, nullable=False),
    sa.Column("workflow", sa.Text, nullable=False),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("flow", sa.Text),
    sa.Column("input", sa.Text, nullable=False, default=""),
    sa.Column("script", sa.Text),  # path of the --script file, if any
    sa.Column("rules", sa.Text),  # path of the --rules file, if any
    sa.Column("workspace", sa.Text, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("result", sa.Text),  # JSON
    sa.Column("error", sa.Text),
    sa.Column("started", sa.Float, nullable=False),  # wall clock (epoch seconds)
    sa.Column("finished", sa.Float),
    sa.Column("owner", sa.String(64)),  # executor id of the process running it
    sa.Column("heartbeat", sa.Float),
    # Every poll asks for runs of one status (a worker's: the active, queued, parked ones) among
    # thousands parked or finished: read through this, never by a scan of the table.
    sa.Index("ix_escalate_runs_status_owner", "status", "owner"),
)

escalations = sa.Table(
    "escalate_escalations", metadata,
    sa.Column("id", sa.String(ESCALATION_ID_MAX), primary_key=True),
    sa.Column("run_id", sa.String(64), nullable=False, index=True),
    sa.Column("created", sa.Float, nullable=False),
    sa.Column("deadline", sa.Float),  # wall clock; None waits for a human
    sa.Column("payload", sa.Text, nullable=False),  # JSON: the escalation and its timeout policy
    sa.Column("status", sa.String(16), nullable=False, index=True),  # pending | decided | withdrawn
    sa.Column("decision", sa.Text),  # JSON
    sa.Column("resolved_by", sa.String(32)),
    sa.Column("decided_at", sa.Float),
    # escalation_digest of the payload as raised: a decision applies only to the request its
    # decider saw (None: raised by a version before digests).
    sa.Column("digest", sa.String(64)),
    # A run's pending ones (parked runs ready to continue: one probe each; SQLite, with no
    # statistics, otherwise probes by status alone, every pending row for each run), and the
    # pending ones whose deadline has passed (without reading the others).
    sa.Index("ix_escalate_escalations_run_status", "run_id", "status"),
    sa.Index("ix_escalate_escalations_status_deadline", "status", "deadline"),
)

agent_history = sa.Table(  # seed 002: every agent-to-agent escalation, for success rates and loops
    "escalate_agent_history", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("time", sa.Float, nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("target", sa.Text, nullable=False),
    sa.Column("approved", sa.Boolean, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("task", sa.Text, nullable=False),
    sa.Column("denial", sa.Text),
)

imports = sa.Table(  # --store files already imported, so that each is imported once
    "escalate_imports", metadata,
    sa.Column("path", sa.Text, primary_key=True),
    sa.Column("imported", sa.Float, nullable=False),
)

run_tokens = sa.Table(  # model tokens a run has used
    "escalate_run_tokens", metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("tokens", sa.BigInteger, nullable=False),
)

# A run's recorded steps (engine/durable/steps.py): what each model turn, tool call and raised
# escalation gave, numbered as DBOS numbers a workflow's steps; a replay gives these back. A run
# recorded before version 3 has its steps in DBOS's `operation_outputs`, read too.
step_results = sa.Table(
    "escalate_steps", metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("result", sa.Text),  # JSON: what the step returned
    sa.Column("error", sa.Text),  # JSON {"name", "message"}: what it raised instead
)

events = sa.Table(
    "escalate_events", metadata,
    sa.Column("run_id", sa.String(64), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),
    sa.Column("type", sa.String(32), nullable=False),
    sa.Column("time", sa.String(40), nullable=False),
    sa.Column("fields", sa.Text, nullable=False),
)


# The statements a run's start and its status changes execute, built once (SQLAlchemy caches
# their compiled form; building a statement with its values inlined cost more than executing
# it): the values are the execution's parameters, an UPDATE's SET its parameters' columns.
_INSERT_RUN = runs.insert()
_UPDATE_RUN = runs.update().where(runs.c.run_id == sa.bindparam("match_run"))
_INSERT_ESCALATION = escalations.insert()
_ESCALATION_CREATED = sa.select(escalations.c.created).where(escalations.c.id == sa.bindparam("match_id"))
_ESCALATION = escalations.select().where(escalations.c.id == sa.bindparam("match_id"))


# News to the other processes names escalations, nothing else: `raised ID`, `decided ID [ID ...]`,
# `withdrawn ID` (engine/durable/signals.py). Anyone who can send news can send any text, so a
# process that hears it reads the rows: a message is a hint to look, never a request or a decision.
NEWS_IDS = 50  # escalation ids in one `decided` message (PostgreSQL's NOTIFY takes 8,000 bytes)


@dataclass(frozen=True)
class DecideResult:
    won: bool  # this call's decision is the one applied
    decision: dict[str, Any] | None  # the applied decision (ours or the earlier one)
    resolved_by: str | None
    # The escalation's status after the call: decided | withdrawn | unknown, or changed: still
    # pending, but not the request the decider saw (its digest differs).
    status: str


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self._events_queue: list[dict[str, Any]] = []
        self._tokens_queue: dict[str, int] = {}  # run id -> its latest token count, not written yet
        self._events_lock = threading.Lock()
        self._events_pending = threading.Event()
        self._events_hurry = threading.Event()  # someone waits for the queue (flush_events): no lingering
        self._events_busy = False
        self._events_writer: threading.Thread | None = None
        self._events_write = threading.Lock()  # held while a batch is taken and written
        self._events_failing = False  # the last batch could not be written (said once)
        self._dbos_engine: sa.Engine | None = None
        path = sqlite_path(url)
        self._sqlite = path
        self._loop_writer: LoopWriter | None = None  # made at the first step recorded (record_step_now)
        try:
            if path is not None:
                _create_file(path)
            self.engine = sa.create_engine(engine_url(url), future=True,
                                           connect_args=_postgres_options() if path is None else {})
            if path is not None:
                from engine.durable import sqlite_wait

                sa.event.listen(self.engine, "connect", _sqlite_pragmas)
                # A write that opens its transaction waits for the lock in even 1 ms steps (sqlite_wait.py).
                sa.event.listen(self.engine, "do_execute", sqlite_wait.do_execute)
                sa.event.listen(self.engine, "do_executemany", sqlite_wait.do_executemany)
            else:
                sa.event.listen(self.engine, "handle_error", _on_error)
            prepare(self.engine, metadata)  # created, or upgraded to this escalate's version
        except (OSError, sa.exc.SQLAlchemyError, DatabaseError) as exc:
            raise DatabaseError(f"{shown(url)}: cannot open the database: {_why(exc)}") from None
        from engine.durable.signals import signals_for

        self.signals = signals_for(url, self.engine)  # news to the other processes on this database

    def close(self) -> None:
        self.flush_events()
        if self._loop_writer is not None:
            self._loop_writer.close()
        self.signals.close()
        self.engine.dispose()
        if self._dbos_engine is not None:
            self._dbos_engine.dispose()

    def dbos_engine(self) -> sa.Engine | None:
        """SQLite: the engine DBOS records steps with (`DBOSConfig["system_database_engine"]`),
        with DBOS's own connection settings (`_dbos_connection`) and ours: WAL and
        `synchronous=NORMAL`. The engine DBOS makes itself keeps SQLite's default (FULL: an
        fdatasync of the WAL at every commit that writes, one a step) and pings at every checkout:
        for a power cut and a network, not a process crash (docs/durable.md). None on
        PostgreSQL: DBOS makes its own."""
        if self._dbos_engine is None and sqlite_path(self.url) is not None:
            self._dbos_engine = sa.create_engine(engine_url(self.url), future=True)
            sa.event.listen(self._dbos_engine, "connect", _dbos_connection)
        return self._dbos_engine

    # -- runs ------------------------------------------------------------------------------

    def create_run(self, *, then: Callable[[sa.Connection], None] | None = None, **row: Any) -> None:
        """`then(connection)`: more work in the same transaction (a run queued for the workers)."""
        with self.engine.begin() as c:
            c.execute(_INSERT_RUN, _run_in(row))
            if then is not None:
                then(c)

    def create_run_now(self, **row: Any) -> bool:
        """SQLite: a new run's row written on the caller's thread (a loop) only if the write lock
        is free (engine/durable/loop_write.py), as `record_step_now`: False when nothing was done
        (the lock taken): `create_run` on a thread then. A burst of starts from a console competes
        with the runs' steps and DBOS's rows for the lock: the loop never waits. PostgreSQL: the
        row is written now, as `create_run` (a round trip; no lock to wait for), so a start that
        cannot be recorded raises here, as it always did."""
        if self._sqlite is None:
            self.create_run(**row)
            return True
        full = {**_RUN_DEFAULTS, **_run_in(row)}
        return self._writer().create_run(tuple(full[k] for k in _RUN_COLUMNS))

    def update_run(self, run_id: str, **fields: Any) -> None:
        """Change the run's row, in one transaction with its events not written yet: what the
        row says (waiting, done) never runs ahead of the log. A run that ended is never replayed,
        so an event lost after its end would stay lost (issue 22, finding 12)."""
        values = {**_run_in(fields), "match_run": run_id}
        self.with_events(run_id, lambda c: c.execute(_UPDATE_RUN, values))

    def with_events(self, run_id: str, work: Callable[[sa.Connection], T]) -> T:
        """`work(connection)` in one transaction with the run's events (and token count) not
        written yet, after the writer's batch in flight (which may hold the run's earlier ones).
        If the transaction fails they are queued again, ahead of the run's newer ones."""
        with self._events_write:
            mine, tokens = self._take_queued(run_id)
            try:
                with self.engine.begin() as c:
                    _write_batch(c, mine, tokens)
                    return work(c)
            except BaseException:
                self._queue_again(mine, tokens)
                raise

    def record_step_now(self, row: dict[str, Any]) -> bool | None:
        """SQLite: the step's row (`escalate_steps`' columns) in one transaction with its run's
        events not written yet, on the caller's thread, only if nothing has to be waited for
        (engine/durable/loop_write.py): whether the row was new; None: nothing was done (the
        lock or the events writer busy, or PostgreSQL): `with_events` on a thread then."""
        if self._sqlite is None or not self._events_write.acquire(blocking=False):
            return None
        try:
            writer = self._writer()
            mine, tokens = self._take_queued(row["run_id"])
            new = None
            try:
                new = writer.write([tuple(e[k] for k in _EVENT_COLUMNS) for e in mine],
                                              list(tokens.items()), tuple(row[k] for k in _STEP_COLUMNS))
            finally:
                if new is None:  # not written (or an error): queued again, as with_events does
                    self._queue_again(mine, tokens)
            return new
        finally:
            self._events_write.release()

    def _writer(self) -> LoopWriter:
        assert self._sqlite is not None
        if self._loop_writer is None:
            self._loop_writer = _loop_writer(self._sqlite)
        return self._loop_writer

    def _take_queued(self, run_id: str) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The run's events and token count not written yet, out of the queue (with
        _events_write held: the writer's batch in flight went first)."""
        with self._events_lock:
            mine = [row for row in self._events_queue if row["run_id"] == run_id]
            if mine:
                self._events_queue = [row for row in self._events_queue if row["run_id"] != run_id]
            tokens = {run_id: self._tokens_queue.pop(run_id)} if run_id in self._tokens_queue else {}
        return mine, tokens

    def _queue_again(self, mine: list[dict[str, Any]], tokens: dict[str, int]) -> None:
        """What `_take_queued` took and was not written: back ahead of the run's newer ones."""
        with self._events_lock:
            self._events_queue[:0] = mine
            for key, count in tokens.items():  # a newer count queued since wins
                self._tokens_queue.setdefault(key, count)

    def set_tokens(self, run_id: str, tokens: int) -> None:
        """The run's token count so far (one writer per run: the process running it), written
        with the run's events: a model turn waits for no database write. A count lost to a
        crash is counted again by the replay, which counts the recorded turns."""
        with self._events_lock:
            self._tokens_queue[run_id] = tokens
            self._wake_writer()

    def tokens_of(self, run_ids: Iterable[str]) -> dict[str, int]:
        ids = list(run_ids)
        if not ids:
            return {}
        self.flush_events()
        with self.engine.connect() as c:
            found = c.execute(sa.select(run_tokens.c.run_id, run_tokens.c.tokens).where(run_tokens.c.run_id.in_(ids)))
            return {row.run_id: row.tokens for row in found if _tokens_ok(row)}

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as c:
            row = c.execute(runs.select().where(runs.c.run_id == run_id)).mappings().first()
        return _run_out(row) if row else None  # a bad row: BadRow, one line naming it

    def list_runs(self, *, include_finished: bool = False, parked: bool = True, queued: bool = True) -> list[dict[str, Any]]:
        """`parked`, `queued`: with the runs parked at a person's decision, with those queued for
        a worker (a worker's takeover scan, which has nothing to take there, and the console's
        history of finished runs leave out their thousands)."""
        query = runs.select().order_by(runs.c.started)
        if not include_finished:
            query = query.where(runs.c.status.in_((*ACTIVE, *((QUEUED,) if queued else ()), *((PARKED,) if parked else ()))))
        elif not (parked and queued):
            query = query.where(runs.c.status.not_in((*(() if queued else (QUEUED,)), *(() if parked else (PARKED,)))))
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _run_out)

    def beat(self, owner: str, now: float | None = None) -> None:
        """This process is alive: its active runs are not interrupted."""
        with self.engine.begin() as c:
            c.execute(runs.update().where(runs.c.owner == owner, runs.c.status.in_(ACTIVE))
                      .values(heartbeat=now if now is not None else time.time()))

    def release(self, owner: str) -> None:
        """This process stops: its active runs are interrupted at once, for anyone to continue."""
        with self.engine.begin() as c:
            c.execute(runs.update().where(runs.c.owner == owner, runs.c.status.in_(ACTIVE)).values(heartbeat=None))

    def claim_run(self, run_id: str, owner: str, *, dead_owner: str | None = None, now: float | None = None) -> bool:
        """Take an interrupted run over (first taker wins); False when its owner is alive.
        `dead_owner`: an owner known to be gone (a process of this host that no longer exists),
        whose heartbeat need not be waited out."""
        now = now if now is not None else time.time()
        gone = [runs.c.owner == owner, runs.c.heartbeat.is_(None), runs.c.heartbeat < now - STALE_AFTER]
        if dead_owner is not None:
            gone.append(runs.c.owner == dead_owner)
        with self.engine.begin() as c:
            done = c.execute(
                runs.update()
                .where(runs.c.run_id == run_id, runs.c.status.in_(ACTIVE), sa.or_(*gone))
                .values(owner=owner, heartbeat=now)
            )
        return done.rowcount == 1

    def claim_queued(self, run_id: str, owner: str, now: float | None = None) -> bool:
        """A worker starts a queued run: it is running, owned by that worker."""
        now = now if now is not None else time.time()
        with self.engine.begin() as c:
            done = c.execute(runs.update().where(runs.c.run_id == run_id, runs.c.status == QUEUED)
                             .values(status="running", owner=owner, heartbeat=now))
        return done.rowcount == 1

    def claim_queued_from(self, run_id: str, owner: str, dead_owner: str, now: float | None = None) -> bool:
        """Take over a queued run that a worker now gone had taken from the queue but not begun."""
        now = now if now is not None else time.time()
        with self.engine.begin() as c:
            done = c.execute(runs.update().where(runs.c.run_id == run_id, sa.or_(
                runs.c.status == QUEUED, sa.and_(runs.c.status.in_(ACTIVE), runs.c.owner == dead_owner)))
                .values(status="running", owner=owner, heartbeat=now))
        return done.rowcount == 1

    def interrupted_runs(self, *, now: float | None = None) -> list[dict[str, Any]]:
        now = now if now is not None else time.time()
        query = runs.select().where(
            runs.c.status.in_(ACTIVE), sa.or_(runs.c.heartbeat.is_(None), runs.c.heartbeat < now - STALE_AFTER)
        ).order_by(runs.c.started)
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _run_out)

    # -- escalations -------------------------------------------------------------------------

    def add_escalation(self, esc_id: str, run_id: str, payload: dict[str, Any], created: float, deadline: float | None,
                       *, digest: str) -> float:
        """Record a raised escalation (`digest`: escalation_digest of `payload`); raising the same
        id again (a replayed step) is a no-op. Returns the raise time recorded for it."""
        with self.engine.begin() as c:
            exists = c.execute(_ESCALATION_CREATED, {"match_id": esc_id}).first()
            if exists is None:
                c.execute(_INSERT_ESCALATION, dict(
                    id=esc_id, run_id=run_id, created=created, deadline=deadline,
                    payload=json.dumps(payload), status="pending", digest=digest))
                news = f"raised {esc_id}"
                self.signals.in_transaction(c, news)
        if exists is None:
            self.signals.committed(news)
            return created
        return float(exists[0])

    def get_escalation(self, esc_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as c:
            row = c.execute(_ESCALATION, {"match_id": esc_id}).mappings().first()
        return _escalation_row(row) if row else None

    def pending_escalations(self, run_ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        query = escalations.select().where(escalations.c.status == "pending").order_by(escalations.c.created)
        if run_ids is not None:
            query = query.where(escalations.c.run_id.in_(list(run_ids)))
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _escalation_row)

    def pending_among(self, esc_ids: Iterable[str]) -> list[dict[str, Any]]:
        ids = list(esc_ids)
        if not ids:
            return []
        query = (escalations.select().where(escalations.c.id.in_(ids), escalations.c.status == "pending")
                 .order_by(escalations.c.created))
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _escalation_row)

    def pending_ids(self) -> set[str]:
        with self.engine.connect() as c:
            return set(c.execute(sa.select(escalations.c.id).where(escalations.c.status == "pending")).scalars())

    def escalations_of(self, run_id: str) -> list[dict[str, Any]]:
        query = escalations.select().where(escalations.c.run_id == run_id).order_by(escalations.c.created)
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _escalation_row)

    def escalations_among(self, esc_ids: Iterable[str]) -> list[dict[str, Any]]:
        """These escalations as the database holds them, whatever their status (unknown ids are
        left out): what a process reads when it hears news of them."""
        ids = list(esc_ids)
        if not ids:
            return []
        query = escalations.select().where(escalations.c.id.in_(ids)).order_by(escalations.c.created)
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _escalation_row)

    def decided(self, esc_ids: Iterable[str]) -> list[dict[str, Any]]:
        """Which of these escalations are no longer pending (for a process waiting on them)."""
        ids = list(esc_ids)
        if not ids:
            return []
        query = escalations.select().where(escalations.c.id.in_(ids), escalations.c.status != "pending")
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _escalation_row)

    def decide(self, esc_id: str, decision: dict[str, Any], resolved_by: str, *, digest: str,
               now: float | None = None) -> DecideResult:
        """Apply a decision unless one was applied first; exactly one writer ever wins. `digest`:
        the escalation as its decider saw it; the row must still hold that request."""
        with self.engine.begin() as c:
            # The driver's own statement, as `decide_many`'s: `escalate answer` decides once in its
            # life, and SQLAlchemy compiling the update there was ~1.5 ms of its 2.2 (issue 26).
            done = c.exec_driver_sql(_decide_sql(c), (json.dumps(decision), resolved_by,
                                                      now if now is not None else time.time(), esc_id, digest))
            won = done.rowcount == 1
            if won:
                news = f"decided {esc_id}"
                self.signals.in_transaction(c, news)
            else:
                row = c.execute(escalations.select().where(escalations.c.id == esc_id)).mappings().first()
        if won:
            self.signals.committed(news)
            return DecideResult(True, decision, resolved_by, "decided")
        return _lost(row)

    def decide_many(self, items: list[tuple[str, dict[str, Any], str, float | None, str]]) -> list[DecideResult]:
        """`decide` for each (id, decision, resolved_by, now, digest), all in one transaction: each
        escalation still gets its own conditional update (pending only), so each is won or
        lost on its own; what holds afterwards tells which were ours (a decision's JSON carries
        its time and channel: two writers never write the same). Every decision won is news to
        the other processes, as with `decide`."""
        if not items:
            return []
        wall = time.time()
        rows = [(json.dumps(decision), resolved_by, now if now is not None else wall, esc_id, digest)
                for esc_id, decision, resolved_by, now, digest in items]
        ids = [esc_id for esc_id, *_ in items]
        with self.engine.begin() as c:
            # The driver's own executemany: SQLAlchemy's per-row parameter handling was most of
            # the time for a taught rule releasing 200 requests (10 of 14 ms).
            c.exec_driver_sql(_decide_sql(c), rows)
            held = {r["id"]: r for r in c.execute(
                sa.select(escalations.c.id, escalations.c.status, escalations.c.decision, escalations.c.resolved_by)
                .where(escalations.c.id.in_(ids))).mappings()}
            results = [_held_result(held.get(esc_id), decision, resolved_by, text)
                       for (text, resolved_by, _at, esc_id, _digest), (_id, decision, *_rest) in zip(rows, items)]
            won = [esc_id for esc_id, result in zip(ids, results) if result.won]
            # One message names up to NEWS_IDS of them: 200 messages were 200 NOTIFYs (PostgreSQL)
            # or 200 sends to each listener (SQLite).
            won_news = [" ".join(["decided", *won[i:i + NEWS_IDS]]) for i in range(0, len(won), NEWS_IDS)]
            for news in won_news:
                self.signals.in_transaction(c, news)
        for news in won_news:
            self.signals.committed(news)
        return results

    def withdraw(self, esc_id: str) -> None:
        with self.engine.begin() as c:
            done = c.execute(escalations.update().where(escalations.c.id == esc_id, escalations.c.status == "pending")
                             .values(status="withdrawn", decided_at=time.time()))
            if done.rowcount == 1:
                self.signals.in_transaction(c, f"withdrawn {esc_id}")
        if done.rowcount == 1:
            self.signals.committed(f"withdrawn {esc_id}")

    def past_escalations(self, limit: int = 100_000) -> list[dict[str, Any]]:
        """Decided and withdrawn escalations, oldest first (the history of earlier sessions)."""
        query = (escalations.select().where(escalations.c.status != "pending")
                 .order_by(escalations.c.created.desc(), escalations.c.id.desc()).limit(limit))
        with self.engine.connect() as c:
            return checked.valid(reversed(list(c.execute(query).mappings())), _escalation_row)

    # -- agent-to-agent history and imports ---------------------------------------------------

    def add_agent_entries(self, entries: Iterable[tuple[Any, ...]]) -> None:
        rows = [dict(time=e[0], source=e[1], target=e[2], approved=bool(e[3]), reason=e[4], task=e[5], denial=e[6])
                for e in entries]
        if rows:
            with self.engine.begin() as c:
                c.execute(agent_history.insert(), rows)

    def agent_entries(self) -> list[tuple[Any, ...]]:
        query = sa.select(agent_history.c.time, agent_history.c.source, agent_history.c.target, agent_history.c.approved,
                          agent_history.c.reason, agent_history.c.task, agent_history.c.denial, agent_history.c.id
                          ).order_by(agent_history.c.id)
        with self.engine.connect() as c:
            return [tuple(r.values())[:7] for r in checked.valid(c.execute(query).mappings(), _agent_entry)]

    def claim_import(self, path: str) -> bool:
        """Mark a --store file as imported; False when it already was (by any process)."""
        try:
            with self.engine.begin() as c:
                c.execute(imports.insert().values(path=path, imported=time.time()))
        except sa.exc.IntegrityError:
            return False
        return True

    def import_history(self, run_rows: list[dict[str, Any]], escalation_rows: list[dict[str, Any]]) -> None:
        with self.engine.begin() as c:
            if run_rows:
                c.execute(runs.insert(), [_run_in(row) for row in run_rows])
            if escalation_rows:
                c.execute(escalations.insert(), escalation_rows)

    # -- events ------------------------------------------------------------------------------

    def add_event(self, run_id: str, seq: int, type_: str, time_: str, fields: dict[str, Any]) -> None:
        """Queued and written in order by a thread of its own, in batches: a run's events cost its
        loop no database round trip. A crash loses at most the newest events, which the run's
        replay then emits (and writes) again: what is stored is always a prefix of its log."""
        row = dict(run_id=run_id, seq=seq, type=type_, time=time_, fields=json.dumps(fields, default=str))
        with self._events_lock:
            self._events_queue.append(row)
            self._wake_writer()

    def _wake_writer(self) -> None:
        """(with _events_lock held)"""
        if self._events_writer is None or not self._events_writer.is_alive():
            self._events_writer = threading.Thread(target=self._write_events, name="escalate-events", daemon=True)
            self._events_writer.start()
        self._events_pending.set()

    def flush_events(self, timeout: float = 10.0) -> None:
        """Wait until every queued event (and token count) is written."""
        deadline = time.monotonic() + timeout
        self._events_hurry.set()
        while time.monotonic() < deadline:
            with self._events_lock:
                if not self._events_queue and not self._tokens_queue and not self._events_busy:
                    return
            time.sleep(0.005)

    def _write_events(self) -> None:
        while True:
            if not self._events_pending.wait(timeout=5.0):
                with self._events_lock:
                    if not self._events_queue and not self._tokens_queue:
                        self._events_writer = None
                        return
            # What a turn emits is written with what the next turns emit: one transaction every
            # EVENTS_LINGER, not ~2 a turn, each of which took SQLite's lock from the step DBOS
            # was recording (docs/durable.md, "What a turn costs").
            self._events_hurry.wait(EVENTS_LINGER)
            with self._events_write:
                with self._events_lock:
                    batch, self._events_queue = self._events_queue, []
                    tokens, self._tokens_queue = self._tokens_queue, {}
                    self._events_pending.clear()
                    self._events_hurry.clear()
                    self._events_busy = bool(batch or tokens)
                try:
                    if batch or tokens:
                        with self.engine.begin() as c:
                            _write_batch(c, batch, tokens)
                    self._events_failing = False
                except Exception:
                    # Kept for the next batch or the run's next update: what is stored stays a
                    # prefix of each run's log, which a replay or the run's end completes.
                    if not self._events_failing:
                        log.exception("events not recorded yet")
                    self._events_failing = True
                    with self._events_lock:
                        self._events_queue[:0] = batch
                        for run_id, count in tokens.items():  # a newer count queued since wins
                            self._tokens_queue.setdefault(run_id, count)
                finally:
                    with self._events_lock:
                        self._events_busy = False

    def event_count(self, run_id: str) -> int:
        self.flush_events()
        with self.engine.connect() as c:
            return int(c.execute(sa.select(sa.func.count()).select_from(events).where(events.c.run_id == run_id)).scalar() or 0)

    def events_of(self, run_id: str) -> list[dict[str, Any]]:
        self.flush_events()
        query = events.select().where(events.c.run_id == run_id).order_by(events.c.seq)
        with self.engine.connect() as c:
            return checked.valid(c.execute(query).mappings(), _event_out)


# A file's name may hold bytes that are not UTF-8 (lone surrogates in Python), which a database
# cannot store as text: paths are kept as JSON strings (ASCII, exact), other text made UTF-8.
_PATHS = ("path", "script", "rules", "workspace")
_TEXTS = ("run_id", "task", "workflow", "flow", "input", "error")


def _run_in(row: dict[str, Any]) -> dict[str, Any]:
    from engine.text_safety import utf8_text

    out = dict(row)
    for key in _PATHS:
        if out.get(key) is not None:
            out[key] = json.dumps(str(out[key]))
    for key in _TEXTS:
        if isinstance(out.get(key), str):
            out[key] = utf8_text(out[key])
    return out


def _run_out(row: Any) -> dict[str, Any]:
    return checked.run(dict(row), _PATHS)


def _event_out(row: Any) -> dict[str, Any]:
    if not isinstance(row["type"], str) or not isinstance(row["time"], str):
        raise checked.BadRow(f"escalate_events row {row['run_id']!r} #{row['seq']}: type and time must be text")
    return {**checked.event_fields(row["fields"], row["run_id"], row["seq"]), "type": row["type"], "time": row["time"]}


def _agent_entry(row: Any) -> dict[str, Any]:
    return checked.agent_entry(dict(row))


def _tokens_ok(row: Any) -> bool:
    if isinstance(row.tokens, int) and not isinstance(row.tokens, bool) and row.tokens >= 0:
        return True
    checked.report(checked.BadRow(f"escalate_run_tokens row {row.run_id!r}: tokens: not a count"))
    return False


# PostgreSQL: the longest any statement of ours waits for a lock. Escalate's own transactions
# hold theirs for milliseconds; a longer wait is another session's doing, which is named then.
LOCK_TIMEOUT_SECONDS = 5


def _postgres_options() -> dict[str, Any]:
    return {"options": f"-c lock_timeout={LOCK_TIMEOUT_SECONDS * 1000}"}


def _on_error(context: Any) -> BaseException | None:
    """PostgreSQL's "lock timeout" becomes one line naming who holds what we waited for."""
    if getattr(context.original_exception, "sqlstate", None) != "55P03" or context.engine is None:
        return None
    return DatabaseError(f"waited {LOCK_TIMEOUT_SECONDS} s for a lock, {lock_holders(context.engine)}; "
                         "nothing was changed (docs/durable.md: no other role should connect to this database)")


def lock_holders(engine: sa.Engine) -> str:
    """Who holds, in another session, the advisory lock that creates the tables or a lock on one
    of escalate's tables stronger than reading or writing rows: `held by pid 123 (user mallory,
    application psql): ACCESS EXCLUSIVE on escalate_runs`."""
    query = sa.text("""
        SELECT l.pid, a.usename, a.application_name, l.locktype, l.mode, c.relname
        FROM pg_locks l
        LEFT JOIN pg_stat_activity a ON a.pid = l.pid
        LEFT JOIN pg_class c ON l.locktype = 'relation' AND c.oid = l.relation
        WHERE l.granted AND l.pid <> pg_backend_pid()
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND ((l.locktype = 'advisory' AND l.classid = :high AND l.objid = :low AND l.objsubid = 1)
               OR (l.locktype = 'relation' AND c.relname IN :tables
                   AND l.mode NOT IN ('AccessShareLock', 'RowExclusiveLock')))
        ORDER BY l.pid""").bindparams(sa.bindparam("tables", expanding=True))
    try:
        with engine.connect() as c:
            rows = c.execute(query, {"high": CREATE_LOCK_KEY >> 32, "low": CREATE_LOCK_KEY & 0xFFFFFFFF,
                                     "tables": [t.name for t in metadata.sorted_tables] + [VERSION_TABLE]}).all()
    except sa.exc.SQLAlchemyError as exc:
        return f"held by a session not known (cannot read pg_locks: {_why(exc)})"
    if not rows:
        return "held by a session that has let go since, or by a row lock"
    held = []
    for pid, user, application, locktype, mode, relname in rows:
        what = (f"advisory lock {CREATE_LOCK_KEY} (creating or upgrading escalate's tables)" if locktype == "advisory"
                else f"{_mode_words(mode)} on {relname}")
        held.append(f"pid {pid} (user {user or '?'}, application {application or '?'}) holds {what}")
        held[-1] = held[-1][:300]
    return "; ".join(held[:5])


def _mode_words(mode: str) -> str:
    """`AccessExclusiveLock` -> `ACCESS EXCLUSIVE` (as LOCK TABLE spells it)."""
    import re

    return " ".join(re.findall("[A-Z][a-z]+", mode.removesuffix("Lock"))).upper()


def _escalation_row(row: Any) -> dict[str, Any]:
    return checked.escalation(dict(row))


def _held_result(row: Any, decision: dict[str, Any], resolved_by: str, text: str) -> DecideResult:
    """What holds for one escalation of decide_many, from its row after the updates."""
    if row is not None and row["status"] == "decided" and row["decision"] == text and row["resolved_by"] == resolved_by:
        return DecideResult(True, decision, resolved_by, "decided")
    return _lost(row)


def _lost(row: Any) -> DecideResult:
    """A decision not applied: what holds instead (`row`: the escalation's, None if unknown)."""
    if row is None:
        return DecideResult(False, None, None, "unknown")
    if row["status"] == "pending":  # the conditional update found it pending: another request than the one seen
        return DecideResult(False, None, None, "changed")
    held = checked.parse_json(row["decision"], "escalate_escalations", row["id"], "decision") if row["decision"] else None
    return DecideResult(False, checked.decision(held, row["id"]) if held is not None else None, row["resolved_by"], row["status"])


def _write_batch(c: sa.Connection, batch: list[dict[str, Any]], tokens: dict[str, int]) -> None:
    """Events (an INSERT that skips one already stored: a batch is written again after a failure,
    which may have come after its commit, a connection lost then) and token counts."""
    if not batch and not tokens:
        return
    add_events, set_tokens = _batch_statements(c.dialect.name)
    if batch:
        c.execute(add_events, batch)
    if tokens:
        c.execute(set_tokens, [{"run_id": run_id, "tokens": count} for run_id, count in tokens.items()])


_BATCH_STATEMENTS: dict[str, tuple[Any, Any]] = {}


def _batch_statements(dialect: str) -> tuple[Any, Any]:
    """Built once per dialect: a step writes its run's events in its transaction (steps.py), and
    building the two statements cost more than executing them (SQLAlchemy's coercions)."""
    built = _BATCH_STATEMENTS.get(dialect)
    if built is None:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        upsert = insert(run_tokens)
        built = _BATCH_STATEMENTS[dialect] = (
            insert(events).on_conflict_do_nothing(),
            upsert.on_conflict_do_update(index_elements=[run_tokens.c.run_id], set_={"tokens": upsert.excluded.tokens}))
    return built


@dataclass(frozen=True)
class StepStatements:
    """What engine/durable/steps.py executes, built from `step_results` (and DBOS's table)."""

    record: Any  # one step's row (run_id, step, name, result, error); a step recorded already is kept
    recorded: Any  # a run's recorded steps (:run_id): step, name, result, error
    dbos_present: Any  # a row when DBOS's `operation_outputs` exists (it makes it at its launch)
    dbos_recorded: Any  # a run's steps in DBOS's table (:run_id), recorded by an escalate before version 3


_STEP_STATEMENTS: dict[str, StepStatements] = {}
# DBOS's table, as much of it as a run recorded there is read by (dbos/_schemas/system_database.py).
_DBOS_STEP_COLUMNS = ("workflow_uuid", "function_id", "function_name", "output", "error", "serialization")


def step_statements(dialect: str) -> StepStatements:
    """Built once per dialect, as `_batch_statements`: a step's INSERT is executed every turn."""
    built = _STEP_STATEMENTS.get(dialect)
    if built is None:
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert

            present = sa.select(sa.func.to_regclass("dbos.operation_outputs").is_not(None))
        else:
            from sqlalchemy.dialects.sqlite import insert

            master = sa.table("sqlite_master", sa.column("type"), sa.column("name"))
            present = sa.select(sa.literal(1)).select_from(master).where(
                master.c.type == "table", master.c.name == "operation_outputs")
        dbos = sa.table("operation_outputs", *map(sa.column, _DBOS_STEP_COLUMNS),
                        schema="dbos" if dialect == "postgresql" else None)
        steps = step_results.c
        built = _STEP_STATEMENTS[dialect] = StepStatements(
            record=insert(step_results).on_conflict_do_nothing(index_elements=[steps.run_id, steps.step])
            .execution_options(preserve_rowcount=True),  # psycopg: an INSERT's rowcount is -1 without it
            recorded=sa.select(steps.step, steps.name, steps.result, steps.error).where(
                steps.run_id == sa.bindparam("run_id")),
            dbos_present=present,
            dbos_recorded=sa.select(dbos.c.function_id, dbos.c.function_name, dbos.c.output, dbos.c.error,
                                    dbos.c.serialization).where(dbos.c.workflow_uuid == sa.bindparam("run_id")))
    return built


_EVENT_COLUMNS = tuple(c.key for c in events.c)
_STEP_COLUMNS = tuple(c.key for c in step_results.c)
_RUN_COLUMNS = tuple(c.key for c in runs.c)
# what SQLAlchemy's INSERT would fill in for a column not given (its Python default, else NULL)
_RUN_DEFAULTS = {c.key: c.default.arg if c.default is not None else None for c in runs.c}


def _loop_writer(path: Path) -> LoopWriter:
    """The events batch's INSERT and upsert, the step's INSERT and the run's, compiled once for
    SQLite's driver (qmark parameters, in the tables' column order: what `record_step_now` and
    `create_run_now` pass)."""
    from sqlalchemy.dialects import sqlite

    from engine.durable.loop_write import LoopWriter

    dialect = sqlite.dialect()
    compiled = [statement.compile(dialect=dialect)
                for statement in (*_batch_statements("sqlite"), step_statements("sqlite").record, _INSERT_RUN)]
    for statement, columns in zip(compiled, (_EVENT_COLUMNS, ("run_id", "tokens"), _STEP_COLUMNS, _RUN_COLUMNS)):
        assert tuple(statement.positiontup or ()) == columns, statement.string  # the order the rows are passed in
    return LoopWriter(path, [statement.string for statement in compiled], lambda conn: _sqlite_pragmas(conn, None))


def _create_file(path: Path) -> None:
    """A new SQLite database is this user's alone: its folders 0700, the file 0600 before SQLite
    opens it (SQLite gives its -wal, -shm and -journal files the database file's mode). An
    existing file keeps its mode: a database may be shared on purpose."""
    make_folders(path.parent)
    create_private_file(path)


def _decide_sql(c: sa.Connection) -> str:
    """A decision applied unless one was first, in the driver's own SQL: parameters (decision JSON,
    resolved_by, decided_at, id, digest); the row must hold the request its decider saw (a row
    raised before digests holds any)."""
    mark = "?" if c.dialect.paramstyle == "qmark" else "%s"
    return (f"UPDATE {escalations.name} SET status = 'decided', decision = {mark}, resolved_by = {mark}, "
            f"decided_at = {mark} WHERE id = {mark} AND status = 'pending' AND (digest = {mark} OR digest IS NULL)")


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cursor = dbapi_conn.cursor()
    # WAL: readers (other consoles, `escalate runs`) never block the writer; NORMAL is durable
    # across process crashes (a kill -9 loses nothing committed), only not across power loss.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def _dbos_connection(dbapi_conn: Any, record: Any) -> None:
    """DBOS's settings for its SQLite connections (dbos/_sys_db_sqlite.py `_create_engine`, which
    a custom engine skips): every write transaction BEGIN IMMEDIATE, so that DBOS's
    read-then-write transactions (dequeue, the owner check) serialize; foreign keys on; a long
    busy wait. Then ours (WAL, synchronous=NORMAL)."""
    dbapi_conn.isolation_level = "IMMEDIATE"
    _sqlite_pragmas(dbapi_conn, record)
    dbapi_conn.execute("PRAGMA busy_timeout=30000")
    dbapi_conn.execute("PRAGMA foreign_keys=ON")


def _why(exc: BaseException) -> str:
    if isinstance(exc, DatabaseError):  # ours: already one line, naming what it needs to
        return str(exc)
    text = str(getattr(exc, "orig", None) or exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:300]
