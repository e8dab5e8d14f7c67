"""This process's durable side: DBOS launched on the database, the one workflow function every
run is, and the steps a run records.

Why a trampoline: DBOS runs a workflow it recovers or dequeues on its own background event-loop
thread (field notes), while a run must live on the loop of the process that shows it (the
console's, with its broker and screen). The workflow function therefore hands its body to the
host's loop, carrying DBOS's context (a context variable) with it, and waits for it there.

Why a queue per process: `resume` re-enqueues a run; a queue named after this process's executor
id, which only this process listens to (`DBOS.listen_queues`: by default a DBOS process dequeues
from every queue in the database), makes sure that this process, and no other one sharing the
database, executes it. Workers (`escalate worker`) also listen to the shared queue `escalate-runs`
that `run --detach` fills. A registered queue costs a DBOS thread polling the database ten times
a second and a row in DBOS's `queues` table: only a process that resumes runs registers its
queue at open (`resumes`; `escalate run` never does), it is deleted once nothing waits on it for
OWN_QUEUE_LINGER, and at a clean stop (`close`). A run taken back later is put on it and taken
from it by this process itself (`continue_here`, engine/durable/take.py): no registration, no
poll; only a take that fails registers the queue again for DBOS's poll.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
import time
from typing import Any, Awaitable, Callable, Protocol

from engine.durable import parking, steps
from engine.durable.askers import is_outside, withdraw_if_gone
from engine.durable.owners import alive_here, new_owner, pid_gone
from engine.durable.database import ACTIVE, HEARTBEAT_SECONDS, PARKED, QUEUED, STALE_AFTER, Database, DatabaseError

log = logging.getLogger("escalate.durable")

APP_NAME = "escalate"
# Fixed: DBOS filters recovery by application version, and a run must survive an upgrade.
APP_VERSION = "escalate-runs-1"
EXECUTOR_WAIT = 60.0  # a run DBOS hands over before this process has its engines waits this long for them
WORKERS_QUEUE = "escalate-runs"  # `run --detach` queues here; every `escalate worker` takes from it
WORKERS_QUEUE_POLL = 0.05  # seconds between a worker's looks at it (DBOS's queue poll)
WORKFLOW_NAME = "escalate_run"
SETTLE_SECONDS = 5.0  # at most this long, at exit, for DBOS to record the ends of runs that are over
OWN_QUEUE_POLL = 0.1  # seconds between looks at this process's own queue: a resumed run starts within it
# An own queue with nothing queued on it this long is deleted (its poller ends with its row);
# registered again only for a run this process could not take back itself (`continue_here`).
OWN_QUEUE_LINGER = 5.0
# What `take_back` did with a parked run held here.
WAITS, GONE, TAKEN, CLAIMED = "waits", "gone", "taken", "claimed"
# DBOS's thread pool (its steps' and workflows' database writes, and every `asyncio.to_thread`
# of a loop it runs on) is unbounded by default: 200 runs started at once grew it to ~130 threads,
# ~40 KB of RSS each run, all queueing for SQLite's one write lock anyway (docs/durable.md).
EXECUTOR_THREADS = 16


class RunRefused(DatabaseError):
    """A run this process will not continue: its rows are not JSON, or the database is not
    this user's (engine/durable/trust.py). The message is the one line the person reads."""


class RunExecutor(Protocol):
    async def execute_durable(self, run_id: str) -> None: ...


_HOST: "DurableHost | None" = None


def current_host() -> "DurableHost | None":
    return _HOST


def _workflow_function() -> Callable[[str], Awaitable[None]]:
    from dbos import DBOS

    @DBOS.workflow(name=WORKFLOW_NAME)
    async def escalate_run(run_id: str) -> None:
        steps.begin(run_id)  # its recorded steps: read at its first step, once
        host = _HOST
        recorded = host.taken_back(run_id) if host is not None else None
        if host is not None and host.new(run_id):
            steps.nothing_recorded()  # started here just now: nothing of it was recorded, nor is it over
        elif recorded is not None:
            steps.already_read(recorded)  # claimed back here just now (not over), its steps read then
        elif host is not None and await asyncio.to_thread(host.over, run_id):
            # Recovered or resumed after the run ended (its process killed between the run's
            # last row and DBOS's SUCCESS): never executed again; DBOS records it finished.
            log.info("%s: already over; its workflow is finished, not executed again", run_id)
            return
        if host is not None and host.executor is None:
            # Dequeued as a worker starts, before its engines exist (DBOS's queue is listened to
            # from launch): the run waits for them instead of failing for good.
            await asyncio.to_thread(host.executor_ready.wait, EXECUTOR_WAIT)
        if host is None or host.executor is None:
            raise RuntimeError("no escalate engine in this process to run " + run_id)
        if asyncio.get_running_loop() is host.loop:
            await host.executor.execute_durable(run_id)
            return
        # Recovered or dequeued by DBOS (its thread): a queued run's steps are checked here, as
        # `resume` checks an interrupted one's, before any of them is read back.
        refusal = host.refusal(run_id)
        if refusal is not None:
            log.error("%s", refusal)
            raise RunRefused(refusal)
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        context = contextvars.copy_context()  # DBOS's workflow context travels with the body

        def start() -> None:
            task = host.loop.create_task(host.executor.execute_durable(run_id), context=context)
            task.add_done_callback(lambda t: _chain(t, done))

        host.loop.call_soon_threadsafe(start)
        await asyncio.wrap_future(done)

    return escalate_run


PRESENCE_GRACE = 2 * HEARTBEAT_SECONDS  # PostgreSQL: a free presence lock and this long without a beat: gone


def owner_alive(owner: str, db: Database | None = None, heartbeat: float | None = None) -> bool:
    """Whether the process an owner id names may still run: certain on this host (the process
    is looked up) and, on PostgreSQL, anywhere: its connection's advisory lock is free and it
    has not beaten for PRESENCE_GRACE (a lock alone could be a dropped connection being made
    again); elsewhere its heartbeat tells (the callers' STALE_AFTER)."""
    if pid_gone(owner):
        return False
    silent = heartbeat is None or heartbeat < time.time() - PRESENCE_GRACE
    return not (db is not None and silent and db.signals.owner_gone(owner))


def trust_target(url: str) -> str:
    """The `--db` value naming this database again (a SQLite file's path as it is)."""
    from engine.durable.trust import shown, sqlite_file

    file = sqlite_file(url)
    return f"sqlite:///{file}" if file is not None else shown(url)


def _chain(task: "asyncio.Task[None]", done: "concurrent.futures.Future[None]") -> None:
    if task.cancelled():
        done.cancel()
    elif task.exception() is not None:
        done.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        done.set_result(None)


class DurableHost:
    """One per process: DBOS on the database, the loop runs execute on, the heartbeat."""

    def __init__(self, db: Database, loop: asyncio.AbstractEventLoop) -> None:
        self.db = db
        self.loop = loop
        self.owner = new_owner()
        self.queue_name = f"escalate-{self.owner}"
        self._executor: RunExecutor | None = None
        self.executor_ready = threading.Event()  # set with the executor (a run dequeued before waits)
        self.draining = False  # a worker stopping: runs it takes from the queue now are left for others
        self._workflow: Callable[[str], Awaitable[None]] | None = None
        self._beat_task: asyncio.Task[None] | None = None
        self._finishing: asyncio.Task[None] | None = None  # finish_ended at open
        self._client: Any = None  # the DBOSClient that queues runs (`enqueue_in`), made at first use
        self._queue_registered = False  # this process's own queue, registered with DBOS (`resumes`)
        self._queue_lock = asyncio.Lock()  # a run put on the own queue vs. that queue deleted
        self._retiring: asyncio.Task[None] | None = None  # deletes the own queue once idle
        self.trusted = True  # the database is this user's (engine/durable/trust.py)
        self.distrust = ""  # else the line saying why, and how to trust it
        self.refused: dict[str, str] = {}  # run id -> the line saying why it is not continued
        self._new: set[str] = set()  # runs `start` was given, their row just written here, not read back
        # Runs claimed back here on their decision (`take_back`), with their recorded steps read
        # then: their execution neither reads their row (not over: claimed) nor their steps again.
        self._taken: dict[str, dict[int, Any]] = {}
        self._warm = False  # `take_back`'s statements compiled (`_warm_take_back`), once a process
        self.worker = False  # an `escalate worker`: its parked runs go back to the shared queue instead
        self.converted = 0  # pickle rows of this user's converted to JSON at open

    @property
    def executor(self) -> RunExecutor | None:
        """What executes this process's runs (an engine, a worker's router)."""
        return self._executor

    @executor.setter
    def executor(self, value: RunExecutor | None) -> None:
        self._executor = value
        if value is not None:
            self.executor_ready.set()

    @property
    def notices(self) -> list[str]:
        """What the person is told once, at open: an untrusted database, refused runs."""
        return ([self.distrust] if self.distrust else []) + list(self.refused.values())

    def _admit(self, worker: bool) -> None:
        """Before DBOS reads anything: whose database this is, this user's pickle rows made
        JSON, and the runs whose rows are still not JSON, refused."""
        from engine.durable import serialization, trust
        from engine.trusted import TrustError

        engine = self.db.engine
        try:
            verdict = trust.assess(engine, self.db.url)
            if verdict.own_rows:
                self.converted, _ = serialization.migrate(engine)
            refusals = serialization.scan(engine)
        except TrustError as exc:
            raise DatabaseError(str(exc)) from None
        except Exception as exc:  # sqlalchemy's errors: one line naming the database
            raise DatabaseError(f"{self.db.url}: cannot check its rows: {str(exc).splitlines()[0][:300]}") from None
        if self.converted:
            log.warning("%s: %d rows written by an earlier escalate converted to JSON", self.db.url, self.converted)
        for refusal in refusals:
            self.refused.setdefault(refusal.workflow_id, refusal.line(self.db.url))
        if not verdict.trusted:
            self.trusted = False
            self.distrust = (f"{self.db.url}: not yours ({verdict.reason}): its runs are listed, never continued; "
                             f"to continue them: escalate trust --db {trust_target(self.db.url)}")
            if worker:
                raise DatabaseError(self.distrust)

    def refusal(self, run_id: str) -> str | None:
        """Why `run_id` must not be continued here, or None (its rows read again: a row written
        since the open counts too)."""
        from engine.durable import serialization

        if not self.trusted:
            return self.distrust
        if run_id in self.refused:
            return self.refused[run_id]
        found = serialization.scan(self.db.engine, run_id)
        if not found:
            return None
        self.refused[run_id] = found[0].line(self.db.url)
        return self.refused[run_id]

    def new(self, run_id: str) -> bool:
        """Whether `run_id` is a run `start` was given, once: its row was just written here as
        running and its workflow never ran before, so it is not over and recorded no step (200
        starts: 200 reads of its row and 200 of its steps saved, with their hops)."""
        if run_id in self._new:
            self._new.discard(run_id)
            return True
        return False

    def taken_back(self, run_id: str) -> dict[int, Any] | None:
        """The recorded steps `take_back` read for `run_id`, once (None: not taken back here)."""
        return self._taken.pop(run_id, None)

    def over(self, run_id: str) -> bool:
        """Whether `run_id`'s row says it ended (done, failed, aborted, stopped): nothing of it
        runs again."""
        row = self.db.get_run(run_id)
        return row is not None and row["status"] not in (*ACTIVE, QUEUED, PARKED)

    async def finish_ended(self) -> list[str]:
        """Workflows DBOS still holds `PENDING` for a run that is over, their executor gone: its
        process was killed between the run's end (its rows written) and DBOS recording the
        workflow's `SUCCESS`. DBOS recovers a `PENDING` workflow only at the launch of a process
        with the same executor id (never again: each process has its own), and escalate's
        takeover looks only at runs not over, so such a row stayed `PENDING` for good. Cancelled
        here (`DBOS.cancel_workflow`: it leaves every queue and no recovery looks at it); a
        workflow resumed anyway finds its run over and ends at once (`escalate_run`). Returns
        the ids cancelled."""
        from dbos import DBOS

        found = await DBOS.list_workflows_async(status="PENDING", name=WORKFLOW_NAME, load_input=False,
                                                load_output=False)
        gone: dict[str, bool] = {}
        ended: list[str] = []
        for status in found:
            run_id, executor = status.workflow_id, status.executor_id
            if not executor or executor == self.owner or run_id in self.refused:
                continue
            if executor not in gone:  # a live one may be recording its SUCCESS right now
                gone[executor] = not await asyncio.to_thread(owner_alive, executor, self.db)
            if gone[executor] and await asyncio.to_thread(self.over, run_id):
                await DBOS.cancel_workflow_async(run_id)
                ended.append(run_id)
        return ended

    async def _finish_ended_at_open(self) -> None:
        try:
            for run_id in await self.finish_ended():
                log.info("%s: over, its workflow left PENDING by a process killed at its end: cancelled", run_id)
        except Exception:  # a busy database: the next process that opens, or a worker's scan, does it
            log.debug("ended workflows not finished", exc_info=True)

    @classmethod
    async def open(cls, db: Database, *, worker_concurrency: int | None = None, resumes: bool = True) -> "DurableHost":
        """Launch DBOS for this process (once; a second open with the same database reuses it).
        `worker_concurrency`: this process is a worker, taking up to that many runs at once
        from the shared queue. `resumes`: this process continues runs started elsewhere
        (`resume`, a console, a worker), so its own queue is registered now; without it (`run`)
        a later `resume` here registers it then, and DBOS's queue thread, which looks for new
        queues every second, hands that run back up to a second later."""
        global _HOST
        loop = asyncio.get_running_loop()
        if _HOST is not None:
            if _HOST.db.url == db.url and _HOST.loop is loop and worker_concurrency is None:
                if resumes:
                    async with _HOST._queue_lock:
                        await _HOST._register_queue()
                    _HOST._retire_later()
                return _HOST
            _HOST.close()  # an earlier console or command of this process, on another database or loop
        host = cls(db, loop)
        host.worker = worker_concurrency is not None
        await asyncio.to_thread(host._admit, worker_concurrency is not None)
        _HOST = host  # before the launch: a run DBOS hands over at once finds it (and waits for its engines)
        own_queue = resumes or worker_concurrency is not None
        if own_queue:
            await asyncio.to_thread(host._register_queue_before_launch)
        try:
            host._launch([WORKERS_QUEUE] if worker_concurrency is not None else [])
        except BaseException:
            _HOST = None
            raise
        from dbos import DBOS

        if own_queue:
            await host._register_queue()  # a database DBOS had not set up yet: registered now
        if worker_concurrency is not None:
            # DBOS keeps one per-worker limit with the queue: the latest worker to start sets it.
            # Every 50 ms: a decided run that parked waits on this poll to be continued (half of
            # answer -> next turn at 0.1 s; an idle poll is reads only, no SQLite write lock).
            await DBOS.register_queue_async(WORKERS_QUEUE, worker_concurrency=worker_concurrency,
                                            polling_interval_sec=WORKERS_QUEUE_POLL, on_conflict="always_update")
        db.signals.hold_presence(host.owner)
        if own_queue:  # off the open's path: a console lists, a `resume` continues, meanwhile
            host._finishing = loop.create_task(host._finish_ended_at_open(), name="escalate finish ended")
            host._retire_later()  # nothing taken back soon: no poll of the own queue while idle
        return host

    async def _register_queue(self) -> None:
        """This process's own queue, registered with DBOS once (it listens to it from launch)."""
        from dbos import DBOS

        if not self._queue_registered:
            await DBOS.register_queue_async(self.queue_name, polling_interval_sec=OWN_QUEUE_POLL)
            self._queue_registered = True

    async def resumes_no_more(self) -> None:
        """This process takes no more runs back for now (`escalate resume`, its run arrived): its
        own queue is deleted at once if nothing waits on it (`_retire_if_idle`)."""
        await self._retire_if_idle()

    async def continue_here(self, run_id: str) -> None:
        """A run this process has claimed, put on its own queue and taken from it here at once
        (engine/durable/take.py: no wait for DBOS's queue thread, no queue polled meanwhile).
        A take that fails (a busy database) leaves it to DBOS's poll of the own queue,
        registered again for it."""
        async with self._queue_lock:
            if await asyncio.to_thread(self._resume_and_take, run_id):
                return
            await self._register_queue()
        self._retire_later()

    async def take_back(self, run_id: str) -> str:
        """A run parked and held by this process, on a decision: in one hop to a thread (each hop
        is a wake-up of a thread and of the loop, ~0.3-1 ms on a busy host), claimed back only if
        nothing of it is pending any more (`parking.claim_parked` with `ready`: one conditional
        update, the first claimer wins), its recorded steps read for the execution to come
        (`taken_back`), then put on the own queue and taken from it here (`continue_here`).
        Returns WAITS (something is still pending: still held), GONE (not held here any more:
        cancelled, taken over), TAKEN (continued, or left on the own queue for DBOS's poll when
        the take failed), or CLAIMED (claimed, not resumed: the caller tries `continue_here`
        again). Measured in docs/durable.md ("The wake")."""
        def claim_and_take() -> tuple[str, bool]:
            if not parking.claim_parked(self.db, run_id, self.owner, holder=self.owner, ready=True):
                return (WAITS if parking.still_waits(self.db, run_id) else GONE), True
            try:
                self._taken[run_id] = steps.recorded_steps(self.db, run_id)
            except Exception:  # a busy database: the execution reads them itself
                log.debug("%s: recorded steps not read with the claim", run_id, exc_info=True)
            try:
                return TAKEN, self._resume_and_take(run_id)
            except Exception:
                self._taken.pop(run_id, None)
                log.debug("%s: claimed back, not resumed yet", run_id, exc_info=True)
                return CLAIMED, True

        async with self._queue_lock:
            outcome, taken = await asyncio.to_thread(claim_and_take)
            if taken:
                return outcome
            await self._register_queue()
        self._retire_later()
        return outcome

    def _resume_and_take(self, run_id: str) -> bool:
        """On a thread: the workflow on the own queue, then taken from it here (engine/durable/
        take.py); False when the take failed (DBOS's poll of the own queue takes it, once the
        caller registers that queue). A failed resume raises."""
        from dbos import DBOS

        from engine.durable import take

        DBOS.resume_workflow(run_id, queue_name=self.queue_name)
        try:
            take.take(self.queue_name, self.owner, APP_VERSION)
        except Exception:
            log.debug("%s: not taken from the own queue here; DBOS's poll takes it", run_id, exc_info=True)
            return False
        return True

    def _retire_later(self) -> None:
        if self._retiring is None or self._retiring.done():
            self._retiring = self.loop.create_task(self._retire_when_idle(), name="escalate own queue")

    async def _retire_when_idle(self) -> None:
        while True:
            await asyncio.sleep(OWN_QUEUE_LINGER)
            try:
                if await self._retire_if_idle():
                    return
            except Exception:  # a busy database: look again later
                log.debug("own queue not retired", exc_info=True)

    async def _retire_if_idle(self) -> bool:
        """Delete the own queue when no run waits on it: DBOS's thread polling it ten times a
        second ends with its row (~35 ms of CPU a second on a loaded host, for the life of a
        console or worker), and no row is left behind. Only this process queues there, under
        `_queue_lock`, so nothing is queued between the look and the delete. True when no
        queue is left."""
        from dbos import DBOS

        async with self._queue_lock:
            if not self._queue_registered:
                return True
            if await DBOS.list_workflows_async(queue_name=self.queue_name, status="ENQUEUED", limit=1,
                                               load_input=False, load_output=False):
                return False
            await DBOS.delete_queue_async(self.queue_name)
            self._queue_registered = False
            return True

    def _register_queue_before_launch(self) -> None:
        """This process's own queue registered before DBOS's launch, so that DBOS's queue thread,
        which lists the queues at launch and then once a second, polls it from the start: a
        queue registered after the launch was first polled ~1 s later (measured 0.91-0.98 s
        after open), and `resume` waited that long for its run. A database DBOS has not set up
        yet (no `queues` table: DBOS's launch makes it) keeps registering after the launch."""
        import sqlalchemy as sa

        try:
            self._dbos_client().register_queue(self.queue_name, polling_interval_sec=OWN_QUEUE_POLL)
        except sa.exc.SQLAlchemyError:
            log.debug("own queue not registered before DBOS's launch", exc_info=True)
            return
        self._queue_registered = True

    def _dbos_client(self) -> Any:
        """The DBOSClient of this process (queues runs, registers a queue), made at first use:
        each one made checks the connection (a query)."""
        from dbos import DBOSClient

        from engine.durable.serialization import serializer

        if self._client is None:
            self._client = DBOSClient(system_database_engine=self.db.engine, application_name=APP_NAME,
                                      serializer=serializer(), lazy=True)
        return self._client

    def enqueue_in(self, conn: object, run_id: str) -> None:
        """Queue a recorded run for the workers, inside the transaction that records it."""
        from dbos import EnqueueOptions

        options: EnqueueOptions = {"workflow_name": WORKFLOW_NAME, "queue_name": WORKERS_QUEUE,
                                   "workflow_id": run_id, "app_version": APP_VERSION}
        self._dbos_client().enqueue_in_transaction(conn, options, run_id)  # type: ignore[arg-type]

    def _launch(self, shared_queues: list[str]) -> None:
        from dbos import DBOS, DBOSConfig

        from engine.durable.serialization import guard_pickle, serializer

        guard_pickle()
        dbos_log = logging.getLogger("dbos")
        for handler in list(dbos_log.handlers):  # an earlier launch's, bound to a stream since closed
            dbos_log.removeHandler(handler)
        dbos_log.setLevel(logging.ERROR)  # DBOS logs every launch at INFO
        self._workflow = _workflow_function()
        config: DBOSConfig = {
            "name": APP_NAME,
            "system_database_url": self.db.url,
            "application_version": APP_VERSION,
            "executor_id": self.owner,
            "run_admin_server": False,
            "log_level": "ERROR",
            # The listener only serves DBOS's recv, get_event, streams and get_result, none of
            # which escalate uses; on SQLite it wakes a thread at this interval. DBOS's destroy
            # joins that thread, so every `run`/`resume` exit waits up to one interval: 1 s (DBOS's
            # default) made `run` exit ~0.35 s later; 0.1 s costs ~10 cheap wakes a second.
            "notification_listener_polling_interval_sec": 0.1,
            "serializer": serializer(),  # JSON: a database is data, never code
            "max_executor_threads": EXECUTOR_THREADS,
        }
        engine = self.db.dbos_engine()  # SQLite: WAL, synchronous=NORMAL (database.py dbos_engine)
        if engine is not None:
            config["system_database_engine"] = engine
        DBOS(config=config)
        DBOS.listen_queues([self.queue_name, *shared_queues])
        try:
            DBOS.launch()
        except Exception as exc:
            raise DatabaseError(f"{self.db.url}: cannot start durable runs: {str(exc).splitlines()[0][:300]}") from None
        # DBOS sets its own level at launch; its warnings (a task cancelled as a process stops on
        # purpose) are not the user's business.
        logging.getLogger("dbos").setLevel(logging.ERROR)
        steps.enable(self.db)

    def close(self) -> None:
        global _HOST
        from dbos import DBOS

        for task in (self._beat_task, self._finishing, self._retiring):
            if task is not None:
                task.cancel()
        if self._queue_registered:
            # Its row goes first (its poller stops taking runs). A run queued there and not yet
            # handed over was claimed by this process, and is released with its other runs just
            # below: whoever takes it over puts its workflow on their own queue (DBOS's resume
            # moves a queued workflow).
            try:  # DBOSClient's: DBOS's own refuses a synchronous call while the loop runs
                self._dbos_client().delete_queue(self.queue_name)
            except Exception:  # the database is gone: the row stays, harmless (nobody listens to it)
                log.debug("own queue not deleted", exc_info=True)
            self._queue_registered = False
        try:
            self.db.release(self.owner)
        except Exception as exc:  # the database is gone (a server stopped): its runs go stale unbeaten instead
            log.warning("%s: this process's runs not released (%s); they count as interrupted after %s s",
                        self.db.url, str(exc).splitlines()[0][:200], STALE_AFTER)
        steps.disable()
        if self._client is not None:
            self._client.destroy()  # its own state only: the engine it was given is the database's
        DBOS.destroy(workflow_completion_timeout_sec=0)
        if not self.loop.is_closed():
            # DBOS made its thread pool the loop's default executor and has just shut it down:
            # whatever else this loop runs (to_thread) gets a fresh one.
            self.loop.set_default_executor(concurrent.futures.ThreadPoolExecutor())
        self.db.close()
        if _HOST is self:
            _HOST = None

    # -- runs ------------------------------------------------------------------------------

    async def start(self, run_id: str) -> None:
        """Start a new run as a workflow on this loop."""
        from dbos import DBOS, SetWorkflowID

        self.keep_beating()
        assert self._workflow is not None
        self._new.add(run_id)
        try:
            with SetWorkflowID(run_id):
                await DBOS.start_workflow_async(self._workflow, run_id)
        except BaseException:
            self._new.discard(run_id)
            raise

    async def settle_ended(self, timeout: float = SETTLE_SECONDS) -> None:
        """Before this process closes DBOS: the workflows it executed whose runs are over, while
        DBOS still records their end (`SUCCESS`), are waited for, at most `timeout`. A process
        that closed DBOS as soon as a run's rows said it ended (`run`, `resume`, a worker's clean
        stop) left such a workflow `PENDING` (seen under load; a worker later finishes it,
        `finish_ended`). Runs left waiting or in flight are not over: not waited for."""
        from dbos import DBOS

        async def settled(run_id: str) -> None:
            handle = await DBOS.retrieve_workflow_async(run_id)
            await handle.get_result(polling_interval_sec=0.02)

        try:
            flows = await DBOS.list_workflows_async(status="PENDING", executor_id=self.owner, name=WORKFLOW_NAME,
                                                    load_input=False, load_output=False)
            ended = [f.workflow_id for f in flows if await asyncio.to_thread(self.over, f.workflow_id)]
            if ended:
                await asyncio.wait_for(asyncio.gather(*map(settled, ended)), timeout)
        except Exception:  # failed, cancelled, or not recorded in time: as it is, for finish_ended
            log.debug("workflows not settled", exc_info=True)

    async def resume(self, run_id: str) -> bool:
        """Continue an interrupted run here, from its last recorded step; False when another
        live process owns it. Raises RunRefused for a run this process must not continue."""
        from dbos import DBOS

        refusal = await asyncio.to_thread(self.refusal, run_id)
        if refusal is not None:
            raise RunRefused(refusal)
        row = await asyncio.to_thread(self.db.get_run, run_id)
        if row is not None and is_outside(row):  # an outside agent's session: no workflow of ours runs it
            await asyncio.to_thread(withdraw_if_gone, self.db, row)
            return False
        if row is not None and row["status"] == PARKED:  # rows only: continued here, first claimer wins
            holder = row["owner"]  # a live process holding it continues it itself on its decision
            if holder and holder != self.owner and await asyncio.to_thread(owner_alive, holder, self.db, row["heartbeat"]):
                return False
            if not await asyncio.to_thread(lambda: parking.claim_parked(self.db, run_id, self.owner, holder=holder)):
                return False
            row = await asyncio.to_thread(self.db.get_run, run_id)
        owner = row["owner"] if row else None
        beat = row["heartbeat"] if row else None
        if owner and owner != self.owner and beat is not None and await asyncio.to_thread(alive_here, owner, beat):
            return False  # executing in a live process of this host whose beat is late: never in two at once
        dead = owner if owner and not await asyncio.to_thread(owner_alive, owner, self.db, beat) else None
        if not await asyncio.to_thread(lambda: self.db.claim_run(run_id, self.owner, dead_owner=dead)):
            return False
        self.keep_beating()
        if await DBOS.get_workflow_status_async(run_id) is None:
            # The process died between recording the run and starting its workflow: nothing of it
            # ran, so it starts from the beginning, here.
            await self.start(run_id)
        else:
            await self.continue_here(run_id)
        return True

    # -- parked runs (engine/durable/parking.py) ------------------------------------------------

    async def end_execution(self, run_id: str) -> None:
        """A run that parks, its execution here over: its workflow leaves the queue and its
        place (DBOS: cancelled), until `requeue`."""
        from dbos import DBOS

        await DBOS.cancel_workflow_async(run_id)
        if not self.worker and not self._warm:
            self._warm = True
            self.loop.run_in_executor(None, self._warm_take_back)

    def _warm_take_back(self) -> None:
        """On a thread, while the person thinks: `take_back`'s statements run once on ids no row
        has, so that the wake does not compile them (SQLAlchemy builds each statement's SQL at
        its first execution in a process, DBOS's too: a `run --wait` takes back one run, and
        its wake compiled every statement it made: ~1-2 ms each on this host, the steps' read
        2.6 ms cold against 0.3 warm). Nothing is changed: each statement matches no row (the
        own queue holds nothing when no run was put on it; anything there is this process's
        to take anyway)."""
        from engine.durable import take

        nobody = "-"  # no run id: ids are `r` and 12 hex digits
        try:
            parking.claim_parked(self.db, nobody, self.owner, holder=self.owner, ready=True)
            parking.still_waits(self.db, nobody)
            steps.recorded_steps(self.db, nobody)
            take.warm(self.queue_name, self.owner, APP_VERSION, nobody)
        except Exception:  # a busy database: the wake compiles them itself
            log.debug("the wake's statements not prepared", exc_info=True)

    async def requeue(self, run_id: str) -> None:
        """A parked run claimed back (parking.claim_ready): its workflow on the workers' queue
        again, for the first worker with a free place to continue from its recorded steps."""
        from dbos import DBOS

        await DBOS.resume_workflow_async(run_id, queue_name=WORKERS_QUEUE)

    def keep_beating(self) -> None:
        if self._beat_task is None or self._beat_task.done():
            self._beat_task = self.loop.create_task(self._beat(), name="escalate heartbeat")

    async def _beat(self) -> None:
        while True:
            try:
                await asyncio.to_thread(self.db.beat, self.owner)
            except Exception:  # a busy database must not end the runs: the next beat tries again
                log.debug("heartbeat failed", exc_info=True)
            await asyncio.sleep(HEARTBEAT_SECONDS)
