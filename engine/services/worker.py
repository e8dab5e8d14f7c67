"""A worker (`escalate worker`): executes runs queued by `run --detach` and takes over the runs of
processes that died, until it is stopped.

- The queue is DBOS's (`WORKERS_QUEUE`): a worker takes up to `concurrency` runs at a time
  from it. A run that pauses for a person leaves the worker and its place (parked: rows only);
  its decision, from any process, puts it back on the queue (engine/services/parking.py).
- Takeover: every second the worker looks for active runs whose process is gone (on this host:
  its pid no longer exists, however late its heartbeat; on PostgreSQL, anywhere: its
  connection's advisory lock is free and it has not beaten for `PRESENCE_GRACE`; otherwise: no
  heartbeat for `STALE_AFTER`), claims
  them with a conditional update (the first taker wins) and continues them here from their last
  recorded step. A queued run that a dead worker took from the queue but never began is taken
  back the same way. A run that is over while DBOS still holds its workflow pending (its process
  killed between the two) has that workflow cancelled (DurableHost.finish_ended).
- Stopping (SIGTERM, or Ctrl-C): no new step starts, the steps in flight finish and are
  recorded, then the runs are released at once for another worker; a second signal stops at
  once (a step in flight then runs again elsewhere).
- Each run has the rules file and workspace it was queued with: one engine per such pair, all
  made on the process's services (engine/services/wiring.py: one broker, one durable host).
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path
from typing import Any, Callable

from engine.durable import parking, steps
from engine.durable.database import ACTIVE, QUEUED, STALE_AFTER, Database
from engine.durable.host import WORKERS_QUEUE, DurableHost, RunRefused, owner_alive
from engine.durable.owners import alive_here
from engine.services.parking import Parking
from engine.services.wiring import Services, open_services

TAKEOVER_SECONDS = 1.0
# How often a worker looks for workflows DBOS still holds pending for runs that are over (their
# process killed at the run's end: DurableHost.finish_ended). Rare, and harmless meanwhile.
FINISH_ENDED_SECONDS = 60.0


class EngineRouter:
    """The host's executor in a worker: each run goes to the engine of its rules and workspace."""

    def __init__(self, services: Services, say: Callable[[str], None]) -> None:
        assert services.db is not None and services.host is not None
        self.services = services
        self.db: Database = services.db
        self.host: DurableHost = services.host
        self.say = say
        self._engines: dict[tuple[str | None, str], Any] = {}
        self.host.executor = self

    def engine_for(self, row: dict[str, Any]) -> Any:
        from rules.loader import load_rules

        key = (row["rules"], row["workspace"])
        engine = self._engines.get(key)
        if engine is None:
            rules = load_rules(row["rules"]) if row["rules"] else load_rules()
            engine = self.services.engine(rules, workspace=Path(row["workspace"]))
            self.host.executor = self  # the engine named itself the executor: runs come here first
            self._engines[key] = engine
        return engine

    async def execute_durable(self, run_id: str) -> None:
        row = await asyncio.to_thread(self.db.get_run, run_id)
        if row is None:
            raise LookupError(f"no run {run_id} in {self.db.url}")
        try:
            engine = self.engine_for(row)
        except Exception as exc:  # its rules file is gone or broken: the run cannot go on anywhere
            self.say(f"{run_id}: failed: {exc}")
            await asyncio.to_thread(self.db.update_run, run_id, status="failed", error=str(exc), finished=time.time())
            return
        if row["status"] == QUEUED:  # with an owner: claimed back from parking, by a decision
            self.say(f"{run_id}: {'continued' if row['owner'] else 'started'} ({row['task']})")
        await engine.execute_durable(run_id)
        handle = engine.run(run_id)
        if handle is not None and not handle.detached:
            ended = f"{handle.status.value}: {handle.error}" if handle.error else handle.status.value
            self.say(f"{run_id}: {ended}")
            self.forget(run_id)  # over: a worker keeps nothing of the runs it ran

    async def resume(self, row: dict[str, Any]) -> Any:
        return await self.engine_for(row).resume_run(row["run_id"])

    def handle(self, run_id: str) -> Any:
        """The run executing here under this id, if any."""
        return next((h for h in self.runs if h.id == run_id), None)

    def forget(self, run_id: str) -> None:
        """Drop a run that ended or parked here: a worker's memory does not grow with its runs."""
        for engine in self._engines.values():
            engine.runs[:] = [h for h in engine.runs if h.id != run_id]

    @property
    def runs(self) -> list[Any]:
        return [handle for engine in self._engines.values() for handle in engine.runs]

    def detach(self, run_ids: set[str] | None = None) -> list["asyncio.Task[None]"]:
        return [task for engine in self._engines.values() for task in engine.detach(run_ids)]


class Worker:
    def __init__(self, db: Database, concurrency: int, say: Callable[[str], None]) -> None:
        self.db = db
        self.concurrency = concurrency
        self.say = say
        self.host: DurableHost | None = None
        self.router: EngineRouter | None = None
        self.parking: Parking | None = None
        self._taking: set[str] = set()  # takeovers in progress
        self._stop = asyncio.Event()
        self._now = asyncio.Event()  # a second signal: stop without waiting for steps

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._signalled)
        try:
            # ADK is imported when a run's first model turn is due, on a thread while the loop
            # goes on (engine/runtime/adk_setup.py models_ready), not at start: an idle worker,
            # or one whose runs wait on people, holds ~65 MiB less (docs/startup.md).
            return await self._serve()
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)

    async def _serve(self) -> int:
        from engine.escalation.broker import RAISED
        from engine.escalation.headless import waiting_message

        services = await open_services(self.db, identity="worker", worker_concurrency=self.concurrency)
        self.host = host = services.host
        assert host is not None
        services.broker.subscribe(lambda event: self.say(
            f"{waiting_message(event.pending)} (answer it with: escalate answer {event.pending.escalation.id} ...)")
            if event.kind == RAISED else None)
        self.router = EngineRouter(services, self.say)
        assert services.store is not None
        self.parking = Parking(self.router, services.broker, services.store, self.say, self.concurrency)
        self.parking.start()
        loop = asyncio.get_running_loop()
        for line in host.notices:  # runs whose rows are not JSON: named once, never taken
            self.say(line)
        self.say(f"worker {host.owner}: taking up to {self.concurrency} runs at a time from {WORKERS_QUEUE} "
                 "(SIGTERM: finish the current steps and stop)")
        scan = loop.create_task(self._take_over_forever(), name="escalate takeover")
        try:
            await self._stop.wait()
            scan.cancel()
            await self._drain()
            await host.settle_ended()
        finally:
            scan.cancel()
            self.parking.stop()
            services.close()  # its runs are released: another worker takes them at once
        self.say(f"worker {host.owner}: stopped")
        return 0

    def _signalled(self) -> None:
        if self._stop.is_set():
            self._now.set()
        self._stop.set()

    async def _drain(self) -> None:
        """No new step; the steps in flight finish (recorded); then each run is left for another
        worker. A second signal leaves them at once."""
        assert self.host is not None and self.router is not None
        router = self.router
        self.host.draining = True
        stopping: list[asyncio.Task[None]] = []

        def idle(run_id: str) -> None:
            stopping.extend(router.detach({run_id}))

        busy = steps.drain(idle)
        active = [h for h in router.runs if not h.status.finished and not h.detached]
        if busy & {h.id for h in active}:
            self.say(f"stopping: waiting for the steps in flight of {len(busy)} run(s)")
        stopping.extend(router.detach({h.id for h in active if h.id not in busy}))
        while any(not h.status.finished and not h.detached for h in router.runs):
            if self._now.is_set():
                stopping.extend(router.detach())
                break
            await asyncio.sleep(0.05)
        if stopping:
            await asyncio.wait(stopping, timeout=10.0)

    # -- takeover ------------------------------------------------------------------------------

    async def _take_over_forever(self) -> None:
        assert self.host is not None
        finished = time.monotonic()  # the host finished ended workflows as it opened
        while True:
            try:
                await self._take_over()
                assert self.parking is not None
                await self.parking.sweep()
                if time.monotonic() - finished >= FINISH_ENDED_SECONDS:
                    finished = time.monotonic()
                    for run_id in await self.host.finish_ended():
                        self.say(f"{run_id}: over; its workflow, left pending by a process killed at its end, cancelled")
            except Exception as exc:  # a busy database: the next scan tries again
                self.say(f"takeover scan failed: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}")
            await asyncio.sleep(TAKEOVER_SECONDS)

    async def _take_over(self) -> None:
        assert self.host is not None
        me = self.host.owner
        rows = await asyncio.to_thread(lambda: self.db.list_runs(parked=False, queued=False))
        verdicts: dict[str, bool] = {}
        now = time.time()
        for row in rows:
            run_id, owner = row["run_id"], row["owner"]
            if run_id in self._taking or owner == me or row["status"] not in ACTIVE or run_id in self.host.refused:
                continue
            beat = row["heartbeat"]
            stale = beat is None or beat < now - STALE_AFTER
            if stale and beat is not None and owner is not None and await asyncio.to_thread(alive_here, owner, beat):
                continue  # late, not gone (stopped, or starved by a loaded host): taking it would run it twice
            if not stale and owner is not None:
                if owner not in verdicts:
                    verdicts[owner] = not await asyncio.to_thread(owner_alive, owner, self.db, beat)
                stale = verdicts[owner]
            if stale:
                self._start_takeover(row, owner)
        if await asyncio.to_thread(parking.queued, self.db, 1):
            await self._take_back_dequeued(verdicts)

    def _start_takeover(self, row: dict[str, Any], owner: str | None) -> None:
        assert self.router is not None
        router = self.router
        run_id = row["run_id"]
        self._taking.add(run_id)

        async def take() -> None:
            try:
                handle = await router.resume(row)
                if handle is not None:
                    self.say(f"{run_id}: taken over from {owner or 'a stopped process'}")
            except RunRefused as exc:  # named once: refused runs are skipped by the next scans
                self.say(str(exc))
            except Exception as exc:
                self.say(f"{run_id}: could not be taken over: {exc}")
            finally:
                self._taking.discard(run_id)

        asyncio.get_running_loop().create_task(take(), name=f"take over {run_id}")

    async def _take_back_dequeued(self, verdicts: dict[str, bool]) -> None:
        """Queued runs a worker took from the queue and died before beginning (rare: a window of
        milliseconds): continued here like any interrupted run."""
        from dbos import DBOS

        assert self.host is not None
        host = self.host
        for status in await DBOS.list_workflows_async(status="PENDING", queue_name=WORKERS_QUEUE,
                                                       load_input=False, load_output=False):
            executor = status.executor_id
            if not executor or executor == host.owner or status.workflow_id in self._taking:
                continue
            if await asyncio.to_thread(host.refusal, status.workflow_id) is not None:
                continue
            if executor not in verdicts:
                verdicts[executor] = not await asyncio.to_thread(owner_alive, executor, self.db)
            if not verdicts[executor]:
                continue
            if await asyncio.to_thread(self.db.claim_queued_from, status.workflow_id, host.owner, executor):
                self.say(f"{status.workflow_id}: taken back from {executor}")
                await host.continue_here(status.workflow_id)
