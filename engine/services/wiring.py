"""`open_services`: what a process needs to run workflows and decide escalations, opened in one
place for every entry point (docs/architecture.md, "Services").

The console opens them after its first frame, `run`/`resume` before their run, `worker` before it
takes runs; each then makes its Engine(s) with `Services.engine` and ends with `Services.close`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.durable.database import Database
    from engine.durable.decisions import DecisionStore
    from engine.durable.feed import Feed
    from engine.durable.host import DurableHost
    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import Clock
    from engine.runtime.engine import Engine
    from engine.runtime.script import Script
    from engine.services.parking import LiveParking


@dataclass
class Services:
    """The broker and clock every engine of a process shares, and with a database (durable runs)
    the database, DBOS's host on this process's loop and the decision store the broker holds.
    Without one (`Services(broker, clock)`: the console without a database) runs live in this
    process only."""

    broker: EscalationBroker
    clock: Clock
    db: Database | None = None
    host: DurableHost | None = None
    store: DecisionStore | None = None
    feed: Feed | None = None  # escalations raised and decided by other processes, heard here
    engines: list[Engine] = field(default_factory=list)
    parking: LiveParking | None = None  # runs held live park past a bound (not in a worker: its own Parking)

    def engine(self, rules: Any, *, workspace: Path | None = None, script: Script | None = None,
               events: Path | None = None) -> Engine:
        """An Engine on these services for one rules set and workspace (a worker makes one per
        pair its runs were queued with); `script` answers its agents offline, `events` gets
        every run's events appended (`run --events`)."""
        from engine.runtime.engine import Engine

        engine = Engine(rules=rules, broker=self.broker, clock=self.clock, script=script, workspace=workspace,
                        events_file=events, db=self.db, host=self.host)
        self.engines.append(engine)
        if self.host is not None:
            self.host.executor = self  # runs DBOS hands back go to the engine that holds them
        return engine

    async def execute_durable(self, run_id: str) -> None:
        """A run DBOS hands to this process: the engine that started it or holds it parked, else
        the latest engine made, as before."""
        engine = next((e for e in self.engines if e.expects(run_id)), self.engines[-1])
        await engine.execute_durable(run_id)

    def close(self) -> None:
        """The process is done: its durable runs are left as they are in the database (running,
        waiting: they continue in the next process that opens or resumes them), the broker stops
        hearing other processes, DBOS and the database close. Runs in memory end with the process."""
        if self.db is None:
            return
        if self.parking is not None:
            self.parking.stop()  # its parked runs let go first, for the workers
        for engine in self.engines:
            engine.detach()
        if self.feed is not None:
            self.feed.stop()
        if self.host is not None:
            self.host.close()  # closes the database too
        else:
            self.db.close()


async def open_decisions(db: Database | str | None, *, identity: str) -> Services:
    """Services for a process that raises escalations and waits for their decisions without
    running workflows (an outside agent's hook, the MCP server): the database, the decision
    store, a broker hearing decisions made anywhere, the clock; no DBOS, no ADK (a hook runs for
    every tool call). Raises DatabaseError (one line); a database opened here is closed then."""
    from engine.durable.decisions import DecisionStore, who
    from engine.durable.feed import Feed
    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import RealClock
    from engine.kernel.collector import started
    from engine.services.database import open_database

    database = open_database(db) if db is None or isinstance(db, str) else db
    clock = RealClock()
    store = DecisionStore(database)
    broker = EscalationBroker(clock, store=store, identity=who(identity))
    feed = Feed(broker, store)
    feed.start()  # decisions made elsewhere reach this process's waits at once
    started()  # the command's start-up is over (engine/kernel/collector.py)
    return Services(broker=broker, clock=clock, db=database, store=store, feed=feed)


async def open_services(db: Database | str | None, *, identity: str, broker: EscalationBroker | None = None,
                        clock: Clock | None = None, hear_everything: bool = False,
                        worker_concurrency: int | None = None, resumes: bool = True) -> Services:
    """Durable services on `db` (a Database, or `--db` as given: a URL, else $ESCALATE_DB, else
    .escalate/escalate.db). Call it on the loop that will run the workflows: DBOS's host is bound
    to it. `identity`: who decides from this process (`escalate run`, `console`, `worker`).
    `broker`: one that subscribers already listen to (the console makes its own before the first
    frame), else a new one. `hear_everything`: every escalation raised anywhere is listed here
    (a console), not only decisions for this process's escalations. `worker_concurrency`: this
    process takes up to that many runs at once from the workers' queue. `resumes=False`: this
    process only starts runs (`escalate run`): DBOS does not poll a queue of its own for runs
    resumed here (engine/durable/host.py). Raises DatabaseError
    (one line) for a database that cannot be used; a database opened here is closed then."""
    from engine.durable.decisions import DecisionStore, who
    from engine.durable.feed import Feed
    from engine.durable.host import DurableHost
    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import RealClock
    from engine.kernel.collector import started
    from engine.kernel.memory import few_arenas
    from engine.services.database import open_database

    few_arenas()  # before DBOS's pool threads start, each of which would keep an arena
    opened = db is None or isinstance(db, str)
    database = open_database(db) if opened else db
    clock = clock or (broker.clock if broker is not None else RealClock())
    store = DecisionStore(database)
    if broker is None:
        broker = EscalationBroker(clock, store=store, identity=who(identity))
    else:
        broker.store, broker.identity = store, who(identity)
    feed = Feed(broker, store)
    try:
        if hear_everything:  # a console lists what waits before DBOS launches: listing needs only the rows
            feed.start(everything=True)
            await feed.caught_up()
        host = await DurableHost.open(database, worker_concurrency=worker_concurrency, resumes=resumes)
    except BaseException:
        feed.stop()
        if opened:  # a Database given stays the caller's to close
            database.close()
        raise
    feed.start(everything=hear_everything)  # decisions made by other processes reach this one's runs at once
    services = Services(broker=broker, clock=clock, db=database, host=host, store=store, feed=feed)
    if worker_concurrency is None:  # a worker parks its runs its own way (engine/services/worker.py)
        import logging

        from engine.services.parking import LiveParking

        services.parking = LiveParking(services.engines, host, database, broker, logging.getLogger("escalate.durable").warning)
        services.parking.start()
    started()  # the command's start-up is over (engine/kernel/collector.py)
    return services
