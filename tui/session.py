"""The console's state without the UI: workflows, the broker, the engine, and what was decided.

The Textual app is a view over one `ConsoleSession`. Nothing here imports Textual, and ADK is
only reached through `open_engine()`, which the app calls after its first frame.
"""

from __future__ import annotations

import gc
import importlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engine.escalation.broker import CANCELLED, RAISED, BrokerEvent, EscalationBroker
from engine.kernel.clock import Clock, RealClock
from engine.kernel.model import Audit, Decision, EscalationRecord, PendingEscalation, Response
from engine.services.wiring import Services

if TYPE_CHECKING:  # imported where used: the agent policy pulls in the rules and YAML (~40 ms before the first frame)
    from engine.escalation.agent_policy import EscalationHistory, HistoryEntry
    from engine.escalation.store import StoredRun
    from engine.lang.header import About
    from engine.runtime.acp.workflow import AgentWorkflow

ENGINE_MODULE = "engine.runtime.engine"
EAGER_CHECK_BYTES = 256 * 1024  # a --store file up to this size is checked before the first frame (~10 ms)
FULL_GC_EVERY = 100  # middle-generation passes per full pass (Python's default: 10)
# Allocations between young passes (Python 3.11's default: 700; 3.12's: 2,000). A key's answer
# allocates ~5,000 objects that die with its frame: at 700, 8 young passes per key moved many
# of them (Textual's strips, each in a cycle of its own, and style nodes) to the older generations
# while alive, and with 20 agents a full pass over them came every 20-30 s, 85,000 objects:
# the rare slow key (163-228 ms measured). At 2,000: no full pass in a 20-agent run (bench_acp.py --console).
YOUNG_GC_EVERY = 2000


def settle_collector() -> None:
    """What exists now lives as long as the console: out of the collector's passes (gc.freeze),
    young passes rarer, full passes ten times rarer, and the collector on."""
    gc.freeze()
    _young, middle, _full = gc.get_threshold()
    gc.set_threshold(YOUNG_GC_EVERY, middle, FULL_GC_EVERY)
    gc.enable()


@dataclass(frozen=True)
class RunRequest:
    """What the user asked to start: a flow of a workflow, or an ACP agent, with its input."""

    flow: str | None  # None: the workflow's default entry (contract: main, default, ...)
    input: str
    agent: AgentWorkflow | None = None  # an ACP agent's command made ready (the workflow is not used)


@dataclass
class WorkflowEntry:
    """One `.sr` file of the workspace and the script that answers its agents."""

    path: Path
    script: Path | None = None
    compiled: Any = None  # the engine's CompiledWorkflow once loaded
    error: str | None = None  # first diagnostic line when it does not compile
    about: About | None = None  # its description and sample input, once loaded

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def flows(self) -> list[str]:
        return list(self.compiled.flows) if self.compiled is not None else []


@dataclass
class ConsoleSession:
    workflows: list[WorkflowEntry]
    rules: Any  # rules.Rules; or a known-good rules file's Path (None: the shipped rules), loaded with the engine
    clock: Clock = field(default_factory=RealClock)
    store: Path | None = None
    workspace: Path | None = None
    db_url: str | None = None  # durable runs: the database (None: runs live in this process only)
    rule_book: Any = None  # rules.book.RuleBook: where taught rules go (None: .escalate/rules.yaml over the shipped rules)
    broker: EscalationBroker = field(init=False)
    engine: Any = field(init=False, default=None)  # engine.runtime.engine.Engine once opened
    records: dict[str, EscalationRecord] = field(init=False, default_factory=dict)
    # History of earlier sessions, read from the database once it opens (after the first frame);
    # a --store file (the history format before the database) is imported into it first.
    earlier: list[EscalationRecord] = field(init=False, default_factory=list)
    earlier_runs: list[StoredRun] = field(init=False, default_factory=list)
    store_error: str | None = field(init=False, default=None)
    store_loaded: threading.Event = field(init=False, default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.broker = EscalationBroker(self.clock)
        self.broker.subscribe(self._record)
        self.services = Services(self.broker, self.clock)  # in memory until open_database()
        self._earlier_agents: list[HistoryEntry] | None = None  # until seeded into the engine
        self._store_lock = threading.Lock()
        self._stored_history: EscalationHistory | None = None  # agent_history before the engine
        self._scripts: dict[Path, tuple[tuple[int, int], Any]] = {}  # script file -> (its version, Script)
        self.imported: tuple[int, int] | None = None  # a --store file imported into the database
        if self.store is not None:
            if self.db_url is None:
                raise ValueError("--store is imported into the database: the session needs db_url")
            self._check_store()
        if self.db_url is None:
            self.store_loaded.set()  # no database: no earlier sessions

    def _check_store(self) -> None:
        """A --store file is checked now, before the first frame: an unusable path, or a bad line
        in a small one, stops the console before it opens (a big one, when it is imported)."""
        from engine.escalation.store import read_store, store_size

        if store_size(self.store) <= EAGER_CHECK_BYTES:  # StoreError: unusable path
            read_store(self.store)  # StoreError: a bad line

    # ---- the engine (ADK) is opened after the first frame --------------------------------------

    @staticmethod
    def preload() -> None:
        """Import the runtime, without ADK: ADK (1-4 s, ~80 MiB) is warmed up on a thread when
        the first run that can reach a model turn starts (engine.runtime.engine.models_ready), so
        that a console that only lists and decides never holds it (docs/startup.md).

        Then everything start-up made (Textual, the runtime: long-lived objects) leaves the
        collector's care: its full passes otherwise walk all of it again and again, each a
        frozen screen. The console command holds the collector off until here (start-up makes
        long-lived objects, and its passes cost ~80 ms of the first frame); it collects again
        from now on."""
        try:
            importlib.import_module(ENGINE_MODULE)
        finally:
            settle_collector()

    def open_engine(self) -> None:
        """Create the engine on the broker and compile every workflow (errors kept per entry)."""
        from engine.lang.header import read_about

        if self.rules is None or isinstance(self.rules, Path):  # shipped rules: parsed after the first frame
            from rules import load_rules  # load_rules(None) gives the shipped defaults

            self.rules = load_rules(self.rules)
        self.engine = self.services.engine(self.rules, workspace=self.workspace)
        if self.db is not None:
            from engine.durable.history import AgentHistoryRecorder

            history = self.engine.agent_policy.history
            with self._store_lock:
                history.add_earlier(self._earlier_agents or [])
                self._earlier_agents = None
            AgentHistoryRecorder(self.db, history).follow(self.engine)
        for entry in self.workflows:
            try:
                entry.compiled = self.engine.load(entry.path)
                entry.about = read_about(entry.path)
            except Exception as exc:  # CompileFailed and unreadable files: shown, not fatal
                entry.error = _first_line(exc)

    async def open_database(self) -> None:
        """Durable runs (after the first frame): the database, DBOS, the broker's store, the
        broker hearing escalations raised and decided by other processes, as they happen. Every
        escalation pending in the database is listed first, before DBOS launches (their runs
        continue in a worker, or in another process)."""
        import asyncio

        from engine.services import open_database, open_services

        assert self.db_url is not None
        db = await asyncio.to_thread(open_database, self.db_url)
        self.services = await open_services(db, identity="console", broker=self.broker, hear_everything=True)
        await asyncio.to_thread(self._load_history)

    @property
    def db(self) -> Any:
        """engine.durable.database.Database once opened, else None."""
        return self.services.db

    @property
    def host(self) -> Any:
        """engine.durable.host.DurableHost once opened, else None."""
        return self.services.host

    def _load_history(self) -> None:
        """The history is the database's: a --store file is imported into it once, then every
        finished escalation, run and hand-off of earlier sessions is read back (a thread)."""
        from engine.durable.history import import_store, load_earlier
        from engine.escalation.store import StoreError

        if self.store is not None:
            try:
                self.imported = import_store(self.db, self.store)
            except StoreError as exc:
                self.store_error = str(exc)
        contents = load_earlier(self.db)
        with self._store_lock:
            self.earlier, self.earlier_runs = contents.escalations, contents.runs
            self._earlier_agents = contents.agent_entries
            self.store_loaded.set()

    def interrupted_runs(self) -> list[str]:
        """Runs left active by a process that is gone: this console continues them (not those
        the host refused: `self.host.notices` names them)."""
        from engine.durable.host import owner_alive

        stale = {r["run_id"] for r in self.db.interrupted_runs()}
        if not self.host.trusted:  # not this user's database: listed, never continued (notices say so)
            return []
        from engine.durable.parking import held

        # The active runs only: not the parked and queued ones (thousands, none of them this
        # console's to continue: a worker continues them), but those parked in a process that
        # held them live and is gone (a killed console or `run --wait`), as before they parked.
        return [r["run_id"] for r in self.db.list_runs(parked=False, queued=False) if r["run_id"] not in self.host.refused and (
                r["run_id"] in stale or r["owner"] is None or not owner_alive(r["owner"], self.db, r["heartbeat"]))] + [
                run_id for run_id, holder, beat in held(self.db)
                if run_id not in self.host.refused and not owner_alive(holder, self.db, beat)]

    @property
    def active(self) -> tuple[int, int]:
        """(decisions waiting, runs active): what quitting leaves for next time."""
        return len(self.broker.pending()), sum(1 for h in self.runs if not h.status.finished)

    def leave(self) -> list[Any]:
        """Stop this console's durable runs without ending them (they stay running or waiting in
        the database and continue next time); returns their tasks, which are unwinding."""
        if self.engine is None or self.db is None:
            return []
        return self.engine.detach()

    def close(self) -> None:
        """The console is quitting: durable runs stay as they are in the database (running,
        waiting) and continue next time."""
        self.services.close()

    def subscribe_runs(self, callback: Callable[[Any], None]) -> Callable[[], None]:
        return self.engine.subscribe(callback)

    def start_run(self, entry: WorkflowEntry, *, flow: str | None = None, input: str = "") -> Any:
        """Start `entry` on the engine; the run's task lives on the running asyncio loop."""
        if self.engine is None or entry.compiled is None:
            raise RuntimeError(entry.error or f"{entry.name} is not loaded yet")
        script = self._script(entry.script) if entry.script else None
        return self.engine.start_run(entry.compiled, flow=flow, input=input, script=script)

    def start_agent(self, agent: AgentWorkflow, *, input: str = "") -> Any:
        """Start an ACP agent on its own, as `run --agent` does: its one-agent workflow, its task
        (the program's name), in its workspace."""
        if self.engine is None:
            raise RuntimeError("the runtime is still loading")
        return self.engine.start_run(self.engine.load(agent.path), input=input, task=agent.task, workspace=agent.workspace)

    def _script(self, path: Path) -> Any:
        """The script as the file is now: read again only when it changed (a 300-reply script
        takes 15 ms to read, on the UI's loop, at every run started)."""
        from engine.runtime.script import load_script

        try:
            stat = path.stat()
        except OSError:
            return load_script(path)  # its own error, naming the file
        version = (stat.st_mtime_ns, stat.st_size)
        cached = self._scripts.get(path)
        if cached is None or cached[0] != version:
            cached = self._scripts[path] = (version, load_script(path))
        return cached[1]

    @property
    def runs(self) -> list[Any]:
        return list(self.engine.runs) if self.engine is not None else []

    def run(self, run_id: str | None) -> Any:
        """The RunHandle with this id, or None."""
        if self.engine is None or run_id is None:
            return None
        return next((h for h in reversed(self.engine.runs) if h.id == run_id), None)

    # ---- decisions ---------------------------------------------------------------------------

    def answer(self, escalation_id: str, response: Response, audit: Audit | None = None,
               seen: PendingEscalation | None = None) -> Decision:
        """A human's answer to exactly this escalation as `seen` on screen (the broker refuses
        stale ones, and RequestChanged: the database holds another request, shown again)."""
        return self.broker.answer(escalation_id, response, audit=audit, seen=seen)

    # ---- rules taught from decisions (engine/escalation/teaching.py) ---------------------------

    @property
    def book(self) -> Any:
        """Where taught rules go (rules.book.RuleBook)."""
        if self.rule_book is None:
            from rules.book import RuleBook

            self.rule_book = RuleBook()
        return self.rule_book

    def teach(self, proposal: Any) -> tuple[Any, list[Decision]]:
        """Save a taught rule; the waiting requests it decides are settled at once."""
        from engine.escalation.teaching import teach

        return teach(self.engine.desk, self.book, proposal, on_rules=self._rules_changed)

    def forget_rule(self, rule: Any) -> None:
        from engine.escalation.teaching import forget

        forget(self.engine.desk, self.book, rule, on_rules=self._rules_changed)

    def _rules_changed(self, rules: Any) -> None:
        self.rules = rules
        self.engine.rules = rules

    def pending(self) -> list[PendingEscalation]:
        return self.broker.pending()

    def _record(self, event: BrokerEvent) -> None:
        esc_id = event.pending.escalation.id
        if event.kind == RAISED:
            self.records[esc_id] = EscalationRecord(event.pending)
            return
        record = self.records.setdefault(esc_id, EscalationRecord(event.pending))
        if event.kind == CANCELLED:
            record.withdrawn = True
        else:
            record.decision = event.decision

    @property
    def agent_history(self) -> EscalationHistory | None:
        """Seed 002's history for the metrics: the engine's (earlier sessions' entries seeded in),
        or before the engine opens, the stored entries alone."""
        if self.engine is not None:
            return self.engine.agent_policy.history
        with self._store_lock:
            if self._stored_history is None and self._earlier_agents:
                from engine.escalation.agent_policy import EscalationHistory

                self._stored_history = EscalationHistory()
                self._stored_history.add_earlier(self._earlier_agents)
            return self._stored_history

    @property
    def agent_policy(self) -> Any:
        """The seed 002 handler (history and metrics), once the engine exists."""
        return getattr(self.engine, "agent_policy", None)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
