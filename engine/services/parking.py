"""Parked runs (engine/durable/parking.py): a run that pauses for a person ends its execution and
leaves rows only. Two sides: a worker's (`Parking`: a decided run goes back to the workers'
queue), and a process that holds its runs live (`LiveParking`: a console, `run --wait`,
`resume`; it continues a decided run itself).

- Park: when a run executing here raises an escalation that waits for a person (at once when
  the queue holds at least as many runs as this worker has free places, else after PARK_AFTER:
  a quick answer reaches it in place; a run in that grace parks at the next poll that finds runs
  queued for a place), its execution
  is stopped as a stopping worker stops it (`detach`: nothing is recorded as its end), its
  workflow leaves the queue and its place (`DurableHost.end_execution`), and its row is parked.
  What stays is rows: the recorded steps and the pending escalation.
- Wake: a parked run with nothing pending is claimed back (first claimer wins) and put on the
  workers' queue (`DurableHost.requeue`); a worker continues it from its recorded steps. News of
  a decision wakes it at once; the poll (`sweep`, every second) finds what news missed.
- Deadlines: no process times a parked run's escalation, so the poll applies the defaults of
  passed deadlines, through the same first-writer-wins update as everywhere (once, whoever is
  first: another worker, a console holding it listed).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from typing import TYPE_CHECKING, Any, Callable

from engine.durable import parking
from engine.durable.database import NEWS_IDS, Database
from engine.durable.decisions import DecisionStore, pending_from_json
from engine.durable.host import CLAIMED, WAITS, DurableHost, owner_alive
from engine.durable.settings import count, seconds
from engine.escalation.broker import (CANCELLED, RAISED, RESOLVED, BrokerEvent, EscalationBroker, NoTimeoutDefault,
                                     timeout_decision)
from engine.kernel.errors import RequestChanged
from engine.kernel.memory import GiveBack
from engine.runtime.run_status import RunStatus

if TYPE_CHECKING:
    from engine.runtime.engine import Engine
    from engine.services.worker import EngineRouter

log = logging.getLogger("escalate.worker")

READ_AT_MOST = 500  # ids heard at once past this: every parked run is looked at instead
# A waiting run keeps its place this long while the worker has free places: an answer given
# meanwhile (a console, a rule, a script) reaches it in place, without a trip through the queue.
# With every place taken and runs queued for one, it parks at once. $ESCALATE_PARK_AFTER.
PARK_AFTER = seconds("ESCALATE_PARK_AFTER", 2.0, least=0.0)
# A run held live (a console, `run --wait`, `resume`) waits this long as a live coroutine, where
# an answer reaches its agent in-process at once (14 ms answer -> next turn, against 136 ms once
# parked); then it parks in its process (LiveParking). Long: a live run costs its process ~160 KB
# and nothing else, while a parked one costs its wake a trip through DBOS's queue.
PARK_LIVE_AFTER = seconds("ESCALATE_PARK_LIVE_AFTER", 600.0, least=0.0)
# A process holds at most this many waiting runs live; a run that comes to wait beyond them
# parks at once, or while other runs execute here, once none does, at most after PARK_AFTER (a
# console with hundreds waiting keeps rows only). It always waited PARK_AFTER (2 s), as a
# worker's does: runs started one after another then overlapped live for those 2 s, and the
# free space they left in the allocators stayed (200 runs: 57-61 -> 22-27 KB of RSS a parked run).
LIVE_WAITING = count("ESCALATE_LIVE_WAITING", 8, least=0)
RETRY_SECONDS = 1.0  # a park or a wake that a busy database refused is tried again this often
# A process is busy (a run beyond LIVE_WAITING parks later, not at once) when this many runs
# execute among the BUSY_SCAN last started: one run started after another is not a burst.
BUSY_AT = 2
BUSY_SCAN = 64


class Parking:
    def __init__(self, router: "EngineRouter", broker: EscalationBroker, store: DecisionStore,
                 say: Callable[[str], None], places: int) -> None:
        self.router = router
        self.places = places  # the worker's --concurrency
        self.host: DurableHost = router.host
        self.db: Database = router.db
        self.broker = broker
        self.store = store
        self.say = say
        self._requeueing: set[str] = set()  # claimed here, not on the queue yet
        self._unparked: set[str] = set()  # executions ended here whose rows could not be parked yet
        self._heard: list[str] = []
        self._grace: dict[str, asyncio.Event] = {}  # waiting runs still holding their place: set to park now
        self._reader: asyncio.Task[None] | None = None
        self._stop: list[Callable[[], None]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopped = False
        # A burst parked and nothing executing here: its free memory back to the system.
        self.memory = GiveBack(lambda: bool(self._live() or self._grace))

    def start(self) -> None:
        """Park runs as they wait; hear decisions (call on the worker's loop)."""
        loop = asyncio.get_running_loop()

        def heard(message: str) -> None:  # on the listening thread
            try:
                loop.call_soon_threadsafe(self._hear, message)
            except RuntimeError:  # the loop closed: the worker is stopping
                pass

        self._stop = [self.broker.subscribe(self._on_event), self.store.listen(heard)]

    def stop(self) -> None:
        self._stopped = True
        self.memory.stop()
        for stop in self._stop:
            stop()
        self._stop = []
        for task in list(self._tasks) + ([self._reader] if self._reader is not None else []):
            task.cancel()

    # -- parking -----------------------------------------------------------------------------

    def _on_event(self, event: BrokerEvent) -> None:
        run_id = event.pending.escalation.run_id
        if self._stopped or event.kind != RAISED or self.router.handle(run_id) is None or run_id in self._grace:
            return
        self._grace[run_id] = asyncio.Event()
        # Outside the run's context: DBOS's workflow context must not come along.
        self._spawn(self._park_when_due(run_id))

    async def _park_when_due(self, run_id: str) -> None:
        """At once when the queue holds a run for each free place (the places fill anyway, and
        a backlog is worked through at the queue's pace, not at PARK_AFTER's); else after
        PARK_AFTER, or sooner when the poll finds runs queued (`_give_up_grace`)."""
        try:
            free = self.places - self._live()
            try:
                wanted = await asyncio.to_thread(parking.queued, self.db, free + 1) > free
            except Exception:  # a busy database: it parks after its grace
                wanted = False
            if not wanted:
                try:
                    await asyncio.wait_for(self._grace[run_id].wait(), PARK_AFTER)
                except asyncio.TimeoutError:
                    pass
        finally:
            self._grace.pop(run_id, None)
        await self.park(run_id)

    def _live(self) -> int:
        """This worker's places taken: runs executing here (waiting ones in their grace too)."""
        return sum(1 for h in self.router.runs if not h.detached and not h.status.finished)

    async def _give_up_grace(self) -> None:
        """Runs queued for a place: the runs here that wait in their grace park now."""
        try:
            if not (self._grace and await asyncio.to_thread(parking.queued, self.db, 1)):
                return
        except Exception:  # a busy database: the next poll looks again
            log.debug("counting queued runs failed", exc_info=True)
            return
        for wanted in self._grace.values():
            wanted.set()

    def _spawn(self, work: Any) -> None:
        if self._stopped:  # a park timer fired as the worker stops: its runs are released instead
            work.close()
            return
        task = asyncio.get_running_loop().create_task(work, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def park(self, run_id: str) -> bool:
        """End the execution of a run that waits for a person here; False when it does not (a
        decision came first, it is stopping, it was taken elsewhere)."""
        handle = self.router.handle(run_id)
        if handle is None or handle.detached or handle.status is not RunStatus.WAITING:
            return False
        if not any(p.escalation.run_id == run_id for p in self.broker.pending()):
            return False  # answered meanwhile: it goes on here
        stopping = self.router.detach({run_id})  # the check above and this, with no await between
        if stopping:
            await asyncio.wait(stopping)
        self.router.forget(run_id)
        return await self._leave(run_id)

    async def _leave(self, run_id: str) -> bool:
        """The rows of a run whose execution here has ended: its workflow off the queue, its row
        parked, then woken if a decision came first. A failure (a busy database) is tried again
        by the next sweep: until then this worker still owns the row, so nobody else would."""
        try:
            await self.host.end_execution(run_id)
            parked, waits = await asyncio.to_thread(parking.park, self.db, run_id, self.host.owner)
        except Exception as exc:
            self.say(f"{run_id}: could not be parked yet: {_line(exc)}")
            self._unparked.add(run_id)
            return False
        self._unparked.discard(run_id)
        if parked:
            self.memory.parked()
        if parked and not waits:
            # Decided before its row said parked. One decided after it is news read from the
            # rows (`_read`), which then find it parked; or the next sweep.
            await self.wake([run_id])
        return parked

    # -- waking ------------------------------------------------------------------------------

    async def wake(self, run_ids: list[str]) -> None:
        """Put these parked runs back on the queue, those with nothing pending (first claimer
        wins); a run a live process holds only once that process is gone (LiveParking)."""
        for run_id in run_ids:
            if run_id in self._requeueing:
                continue
            self._requeueing.add(run_id)
            try:
                if await asyncio.to_thread(self._claim_ready, run_id):
                    await self.host.requeue(run_id)
            except Exception as exc:  # claimed, not queued: the next sweep queues it
                self.say(f"{run_id}: could not be queued again yet: {_line(exc)}")
            finally:
                self._requeueing.discard(run_id)

    def _hear(self, message: str) -> None:
        self._heard.append(message)
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read(), context=contextvars.Context())

    async def _read(self) -> None:
        """News names escalations only: the rows say which parked runs now wait on nothing."""
        while self._heard:
            batch, self._heard = self._heard, []
            ids: dict[str, None] = {}
            everything = False
            for message in batch:
                kind, _, named = message.partition("\n")[0].partition(" ")
                if kind == "*":
                    everything = True
                elif kind in ("decided", "withdrawn"):
                    ids.update(dict.fromkeys(named.split(" ")[:NEWS_IDS]))
            everything = everything or len(ids) > READ_AT_MOST
            try:
                ready = await asyncio.to_thread(parking.ready, self.db, None if everything else list(ids))
                await self.wake(ready)
            except Exception:  # a busy database: the sweep catches up
                log.debug("reading news failed", exc_info=True)

    def _claim_ready(self, run_id: str) -> bool:
        if parking.claim_ready(self.db, run_id, self.host.owner):
            return True
        held = parking.holder(self.db, run_id)
        return (held is not None and held[0] != self.host.owner and not owner_alive(held[0], self.db, held[1])
                and parking.claim_ready(self.db, run_id, self.host.owner, holder=held[0]))

    # -- the poll ----------------------------------------------------------------------------

    async def sweep(self) -> None:
        """Every second: passed deadlines' defaults, parked runs nothing waits on, and runs
        claimed back by a process that died before queueing them."""
        for run_id in list(self._unparked):
            await self._leave(run_id)
        await self._give_up_grace()
        await asyncio.to_thread(self._apply_deadlines)
        await self.wake(await asyncio.to_thread(parking.ready, self.db))
        for run_id, claimer, beat in await asyncio.to_thread(parking.stuck, self.db):
            if run_id in self._requeueing:
                continue
            if claimer != self.host.owner and await asyncio.to_thread(owner_alive, claimer, self.db, beat):
                continue
            if not await self._never_queued(run_id):
                continue
            self._requeueing.add(run_id)
            try:
                if await asyncio.to_thread(parking.take_stuck, self.db, run_id, self.host.owner, claimer):
                    await self.host.requeue(run_id)
            finally:
                self._requeueing.discard(run_id)

    def _apply_deadlines(self) -> None:
        now = time.time()
        for row in parking.overdue(self.db, now):
            pending = pending_from_json(row["payload"])
            try:
                self.store.decide(timeout_decision(pending, now))  # the first writer wins: applied once
            except (NoTimeoutDefault, RequestChanged):
                continue

    async def _never_queued(self, run_id: str) -> bool:
        from dbos import DBOS

        status = await DBOS.get_workflow_status_async(run_id)
        return status is not None and status.status == "CANCELLED"


class LiveParking:
    """A process that holds its runs live (a console, `run --wait`, `resume`, `Engine.start_run`
    on opened services): a run waiting for a person past PARK_LIVE_AFTER ends its execution and
    leaves rows only, held by this process: its row parked with this process as its owner, its
    escalations still listed by the broker (`hold_run`: answerable here, their deadlines armed
    here, decisions of other processes read by the feed), its handle kept (`Engine.park`: a
    console's list and log, `run --wait`'s wait). On its decision this process claims it back
    (`claim_parked`, first claimer wins) and continues it itself from its recorded steps, through
    its own queue (registered again then: DBOS finds it within its one-second look for new
    queues), with the same handle. Runs wait live PARK_LIVE_AFTER (long), at most LIVE_WAITING
    of them; beyond that bound a run parks at once (amid a burst: once the burst has come to
    wait, at most after PARK_AFTER). A worker
    takes such a run only once this process is gone; a clean stop lets go of them (`let_go`)."""

    def __init__(self, engines: "list[Engine]", host: DurableHost, db: Database, broker: EscalationBroker,
                 say: Callable[[str], None]) -> None:
        self.engines = engines  # the Services' list: engines made later count too
        self.host = host
        self.db = db
        self.broker = broker
        self.say = say
        self._due: dict[str, asyncio.TimerHandle] = {}  # runs in their grace
        self._later: dict[str, asyncio.TimerHandle] = {}  # beyond the bound, until this process is quiet
        self._parking: set[str] = set()  # their execution ending, their row not parked yet
        self._held: set[str] = set()  # parked here: rows only, continued here on their decision
        self._retry: set[str] = set()  # a park or a wake a busy database refused
        self._claimed: set[str] = set()  # claimed back, not on the own queue yet
        self._waking: set[str] = set()  # one wake at a time per run
        self._rewake: set[str] = set()  # a decision heard while a wake looked: it looks again after
        self._heard: set[str] = set()  # a decision heard while its row was being parked
        self._tasks: set[asyncio.Task[Any]] = set()
        self._retrying: asyncio.Task[None] | None = None
        self._stop: Callable[[], None] | None = None
        # A burst parked and nothing executing here: its free memory back to the system.
        self.memory = GiveBack(self._executing)

    def start(self) -> None:
        """Park runs as they wait (call on the loop the runs execute on)."""
        self._stop = self.broker.subscribe(self._on_event)

    def stop(self) -> None:
        """The process stops: timers and work dropped; the runs held here are let go, for a
        worker to continue on their decision (a run claimed back and not continued yet is an
        active run of this process, released with the others)."""
        if self._stop is not None:
            self._stop()
            self._stop = None
        for timer in [*self._due.values(), *self._later.values()]:
            timer.cancel()
        self._due.clear()
        self._later.clear()
        self.memory.stop()
        for task in [*self._tasks, *([self._retrying] if self._retrying is not None else [])]:
            task.cancel()
        if self._held:
            try:
                parking.let_go(self.db, self.host.owner)
            except Exception as exc:  # the database is gone: a worker takes them once this process has exited
                self.say(f"parked runs not let go: {_line(exc)}")
            self._held.clear()

    def _executing(self) -> bool:
        """Whether any run executes in this process (being parked too). A run waiting live does
        not count: it may wait there for PARK_LIVE_AFTER, and a burst's give-back would wait with
        it; one still to park asks for another give-back when it parks."""
        return bool(self._parking) or any(
            not h.detached and not h.status.finished and h.status is not RunStatus.WAITING
            for e in self.engines for h in e.runs)

    def _engine_of(self, run_id: str) -> "Engine | None":
        return next((e for e in self.engines if e.run(run_id) is not None), None)

    def _on_event(self, event: BrokerEvent) -> None:
        run_id = event.pending.escalation.run_id
        if event.kind == RAISED:
            if run_id in self._due or run_id in self._later or run_id in self._parking:
                return
            engine = self._engine_of(run_id)
            handle = engine.run(run_id) if engine is not None else None
            if handle is None or not handle.parkable or handle.detached:
                return
            # Timers in a context of their own, as the parks they start: this one is the run's
            # (DBOS's workflow context), and a cancelled timer keeps its context in the loop's
            # heap until its time.
            loop, context = asyncio.get_running_loop(), contextvars.Context()
            if len(self._due) < LIVE_WAITING:
                self._due[run_id] = loop.call_later(PARK_LIVE_AFTER, self._grace_over, run_id, context=context)
                return
            # Beyond the runs held live: rows only at once (its execution's memory back now), or,
            # while other runs execute here (a burst), once the process is quiet, at most after
            # PARK_AFTER: parks amid a burst of 200 made its last approval come 35% later.
            self._later[run_id] = loop.call_later(min(PARK_AFTER, PARK_LIVE_AFTER), self._grace_over, run_id,
                                                  context=context)
            if not self._busy():
                for waiting in list(self._later):
                    self._grace_over(waiting)
        elif event.kind in (RESOLVED, CANCELLED):
            if run_id in self._parking:
                self._heard.add(run_id)  # its park looked, or looks, at the rows: it looks again after
            if run_id in self._held:
                self._spawn(self.wake(run_id))
            elif ((run_id in self._due or run_id in self._later)
                  and not any(p.escalation.run_id == run_id for p in self.broker.pending())):
                # Answered in its grace: it goes on live, and no longer counts among the runs waiting here.
                (self._due.pop(run_id, None) or self._later.pop(run_id)).cancel()

    def _grace_over(self, run_id: str) -> None:
        timer = self._due.pop(run_id, None) or self._later.pop(run_id, None)
        if timer is not None:
            timer.cancel()  # parked before its time (a quiet process): its timer is not due
        self._spawn(self.park(run_id))

    def _busy(self) -> bool:
        """Whether other runs execute here (not waiting for a person): BUSY_AT runs among the
        BUSY_SCAN last started (runs are listed in start order: a burst's are the last ones; a
        bounded look, as a console may list thousands)."""
        executing = 0
        for engine in self.engines:
            for handle in engine.runs[-BUSY_SCAN:]:
                if not handle.detached and handle.status is RunStatus.RUNNING:
                    executing += 1
                    if executing >= BUSY_AT:
                        return True
        return False

    def _spawn(self, work: Any) -> None:
        # Outside any run's context: DBOS's workflow context must not come along.
        task = asyncio.get_running_loop().create_task(work, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def park(self, run_id: str) -> bool:
        """End the execution of a run waiting here and park its row, held by this process;
        False when it does not wait here any more (answered meanwhile, over, cancelled)."""
        engine = self._engine_of(run_id)
        if engine is None or run_id in self._parking or not await engine.park(run_id):
            return False
        return await self._leave(run_id)

    async def _leave(self, run_id: str) -> bool:
        """The rows of a run whose execution here has ended: its workflow off every queue (DBOS:
        cancelled), its row parked; then woken at once if a decision came first. The own queue is
        not kept for its return: its poll (10 a second, ~25 ms of CPU a second) would be all this
        process does while it waits; `continue_here` registers it again on the decision."""
        self._parking.add(run_id)
        try:
            await self.host.end_execution(run_id)
            parked, waits = await asyncio.to_thread(lambda: parking.park(self.db, run_id, self.host.owner, hold=True))
        except Exception as exc:  # a busy database: tried again; meanwhile the row is this process's, waiting
            self.say(f"{run_id}: could not be parked yet: {_line(exc)}")
            self._again(run_id)
            return False
        finally:
            self._parking.discard(run_id)
            heard = run_id in self._heard
            self._heard.discard(run_id)
        self._retry.discard(run_id)
        if not parked:  # its row is no longer this process's (cancelled meanwhile)
            return False
        self._held.add(run_id)
        self.memory.parked()
        if heard or not waits:  # decided before its row said parked, or while it was written
            await self.wake(run_id)
        return True

    async def wake(self, run_id: str) -> None:
        """A held run with nothing pending any more: claimed back (first claimer wins) and put on
        this process's own queue, which hands it to `Engine.execute_durable` here."""
        if run_id in self._waking:
            # Its look may have read the row before this decision: it looks again once done.
            self._rewake.add(run_id)
            return
        if run_id in self._parking or not (run_id in self._held or run_id in self._claimed):
            return
        self._waking.add(run_id)
        try:
            await self._wake(run_id)
            while run_id in self._rewake:
                self._rewake.discard(run_id)
                await self._wake(run_id)
        finally:
            self._waking.discard(run_id)
            self._rewake.discard(run_id)

    async def _wake(self, run_id: str) -> None:
        self._retry.discard(run_id)
        try:
            if run_id in self._held:
                outcome = await self.host.take_back(run_id)  # claimed and continued in one hop
                if outcome == WAITS:
                    return
                self._held.discard(run_id)
                if outcome != CLAIMED:  # continued, or not held here any more (cancelled)
                    return
                self._claimed.add(run_id)
            if run_id in self._claimed:
                await self.host.continue_here(run_id)
                self._claimed.discard(run_id)
        except Exception as exc:  # a busy database: tried again
            self.say(f"{run_id}: could not be continued yet: {_line(exc)}")
            self._again(run_id)

    def _again(self, run_id: str) -> None:
        self._retry.add(run_id)
        if self._retrying is None or self._retrying.done():
            self._retrying = asyncio.get_running_loop().create_task(self._retry_forever(), context=contextvars.Context())

    async def _retry_forever(self) -> None:
        while self._retry:
            await asyncio.sleep(RETRY_SECONDS)
            for run_id in list(self._retry):
                if run_id in self._held or run_id in self._claimed:
                    await self.wake(run_id)
                elif run_id not in self._parking:
                    await self._leave(run_id)


def _line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return text or type(exc).__name__
