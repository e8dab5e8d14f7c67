"""The engine API used by `escalate run` and the console (docs/architecture.md).

One Engine per process: it compiles workflows, starts runs as asyncio tasks on the running loop,
and fans every run's events out to subscribers. Runs share only the escalation desk, broker and
agent policy (all keyed by run); each has its own ADK sessions, script cursor and event sink.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import itertools
import logging
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engine.kernel.clock import Clock
from engine.lang.compiler import CompileFailed, load_workflow
from engine.runtime.adk_setup import warm_up_with, warming
from engine.runtime.events import EventSink, RunEvent
from engine.runtime.priority_loop import BACKGROUND
from engine.runtime.run_status import RunStatus
from engine.runtime.script import Script
from engine.flow.spec import WorkflowBase
from engine.text_safety import utf8_text

if TYPE_CHECKING:
    from engine.durable.database import Database
    from engine.durable.host import DurableHost

log = logging.getLogger("escalate.runtime")

__all__ = ["CompileFailed", "CompiledWorkflow", "Engine", "RunEvent", "RunHandle", "RunStatus", "warm_up"]

# One scripted agent call: enough to import and first-use everything a run touches in ADK.
_WARM_UP_SOURCE = 'prompt p: """Warm up."""\nagent w:\n    instruction p\nflow main:\n    $x = run agent w $input\n    return $x\n'
RESUME_TIMEOUT = 60.0  # seconds for DBOS to hand a resumed run back to this process


@dataclass(frozen=True)
class CompiledWorkflow:
    path: Path
    name: str  # the file's stem
    cls: type[WorkflowBase]

    @property
    def flows(self) -> list[str]:
        return list(self.cls.FLOWS)

    @property
    def agents(self) -> list[str]:
        return list(self.cls.AGENTS)


def _ignored(_: Any) -> None:
    """A handle's report when nothing records it (a run in memory, a parked run)."""


@dataclass
class RunHandle:
    id: str
    task: str
    workflow: str
    flow: str | None
    input: str
    status: RunStatus = RunStatus.RUNNING
    started_at: float = 0.0  # the engine's clock (Clock.now()), as every time of a run
    finished_at: float | None = None
    result: Any = None
    error: str | None = None
    exception: BaseException | None = None  # what ended the run, if anything
    events: list[RunEvent] = field(default_factory=list)
    _task: "asyncio.Task[None] | None" = field(default=None, repr=False)
    _waiting: int = field(default=0, repr=False)  # human waits in progress (parallel branches)
    _cancel: Callable[[], None] = field(default=lambda: None, repr=False)
    # Made by the first `wait` (~700 B with its deque: a parked run keeps its handle, and most
    # handles are never waited on); `_over` says the waiters are released.
    _ended: asyncio.Event | None = field(default=None, repr=False)
    _over: bool = field(default=False, repr=False)
    _on_status: Callable[[RunStatus], None] = field(default=_ignored, repr=False)
    tokens: int = 0  # model tokens the run has used (budgets: rules `budgets:`)
    _on_tokens: Callable[[int], None] = field(default=_ignored, repr=False)
    detached: bool = field(default=False, repr=False)  # left for later: nothing is recorded as its end
    # Its execution ended while it waits for a person (engine/services/parking.py LiveParking):
    # rows only, until this process continues it on the decision, with this same handle.
    parked: bool = field(default=False, repr=False)
    parkable: bool = field(default=False, repr=False)  # durable, and no ACP agent process to lose
    workspace: Path | None = None  # where the run works, when not the engine's (an ACP agent from the console)

    def cancel(self) -> None:
        """Stop the run: its agents stop and its pending escalations are withdrawn."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self._cancel()
        elif self.parked:  # rows only: its escalations withdrawn and its row ended where it is
            self._cancel()

    def _end_unexecuted(self, status: RunStatus, error: str, at: float, exception: BaseException | None = None) -> None:
        """The run ends with no execution of it under way (a start that could not be recorded,
        a parked run cancelled): its outcome set and its waiters released."""
        self.status, self.error, self.exception, self.finished_at = status, error, exception, at
        self._release()

    def _release(self) -> None:
        self._over = True
        if self._ended is not None:
            self._ended.set()

    async def wait(self) -> RunStatus:
        """Wait for the end of the run (whoever waits is not cancelled by the run's cancel)."""
        if not self._over:
            if self._ended is None:
                self._ended = asyncio.Event()
            await self._ended.wait()
        return self.status

    def set_tokens(self, tokens: int) -> None:
        """The runner's report of the tokens the run has used so far."""
        self.tokens = tokens
        self._on_tokens(tokens)

    def set_waiting(self, waiting: bool) -> None:
        """The runner's report that one of the run's calls starts (True) or stops waiting for a person."""
        self._waiting += 1 if waiting else -1
        if not self.status.finished and not self.detached:
            status = RunStatus.WAITING if self._waiting > 0 else RunStatus.RUNNING
            if status is not self.status:
                self.status = status
                self._on_status(status)


class Engine:
    def __init__(
        self,
        *,
        rules: Any,
        broker: Any,
        clock: Clock,
        script: Script | None = None,
        workspace: Path | None = None,
        events_file: Path | None = None,
        db: "Database | None" = None,
        host: "DurableHost | None" = None,
    ) -> None:
        """`db` and `host`: runs are durable (DBOS workflows recorded in the database); the
        broker should then hold a DecisionStore on the same database."""
        from engine.durable.steps import keyed_step
        from engine.escalation.agent_policy import AgentEscalationHandler
        from engine.escalation.desk import EscalationDesk
        from engine.runtime.adk_setup import prepare_adk
        from engine.runtime.tools.edits import checked_edit

        prepare_adk()
        self.rules = rules
        self.broker = broker
        self.clock = clock
        self.script = script
        self.workspace = (workspace or Path.cwd()).resolve()
        self.events_file = events_file  # `escalate run --events`: every run's events appended
        self.runs: list[RunHandle] = []
        self.agent_policy = AgentEscalationHandler(rules.policy, clock)
        self.desk = EscalationDesk(broker, rules, clock, emit=self._emit_for_run, check_edit=checked_edit,
                                   record=keyed_step)
        if getattr(rules, "notify", None) is not None:  # the rules' `notify: {command: [...]}`
            from engine.escalation.notify import notifiers
            from engine.escalation.notify.command import CommandNotifier

            notifiers(broker).register(CommandNotifier(rules.notify))
        self._subscribers: list[Callable[[RunEvent], None]] = []
        self._sinks: dict[str, EventSink] = {}
        self._seq = itertools.count(1)
        self.db = db
        self.host = host
        self._prepared: dict[str, tuple[RunHandle, CompiledWorkflow, Script | None]] = {}
        self._arrivals: dict[str, asyncio.Future[RunHandle]] = {}  # resumed runs, until their body starts
        if host is not None:
            host.executor = self

    # -- workflows ---------------------------------------------------------------------------

    def load(self, path: Path) -> CompiledWorkflow:
        """Compile a `.sr` file; raises CompileFailed with the diagnostics."""
        cls = load_workflow(Path(path))
        return CompiledWorkflow(Path(path), utf8_text(Path(path).stem), cls)  # the name is stored: UTF-8

    # -- events ------------------------------------------------------------------------------

    def subscribe(self, callback: Callable[[RunEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def _emit_for_run(self, run_id: str, type_: str, fields: dict[str, Any]) -> None:
        """The desk's events (human_escalation, decision) go to the run that asked."""
        sink = self._sinks.get(run_id)
        if sink is not None:
            sink.emit(type_, **fields)

    def _fan_out(self, handle: RunHandle, event: RunEvent) -> None:
        handle.events.append(event)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:
                log.exception("engine subscriber failed")

    # -- runs --------------------------------------------------------------------------------

    def start_run(
        self,
        workflow: CompiledWorkflow,
        *,
        flow: str | None = None,
        input: str = "",
        task: str | None = None,
        script: Script | None = None,
        workspace: Path | None = None,
    ) -> RunHandle:
        """Start a run as a task on the running loop; returns at once. A durable engine records
        the run and starts it as a DBOS workflow (its id unique in the database). `workspace`:
        the run's own folder (default: the engine's)."""
        if self.db is not None:
            run_id = f"r{uuid.uuid4().hex[:12]}"
        else:
            run_id = f"r{next(self._seq)}-{uuid.uuid4().hex[:6]}"
        handle = RunHandle(run_id, task or workflow.name, workflow.name, flow, input, started_at=self.clock.now(),
                           workspace=workspace.resolve() if workspace is not None else None)
        chosen = script if script is not None else self.script
        self.runs.append(handle)
        context = contextvars.copy_context()
        context.run(BACKGROUND.set, True)  # on a console's PriorityLoop, its work comes first
        loop = asyncio.get_running_loop()
        if self.db is None or self.host is None:
            handle._task = loop.create_task(self._execute(handle, workflow, chosen), name=f"run {run_id}", context=context)
            return handle
        row = dict(self._run_row(run_id, handle, workflow, chosen), status=RunStatus.RUNNING.value,
                   owner=self.host.owner, heartbeat=handle.started_at)
        # The row now if SQLite's lock is free, else on a thread: this loop (a console's) never
        # waits for the lock while a burst of starts and the runs' steps compete for it.
        written = self.db.create_run_now(**row)
        self._prepared[run_id] = (handle, workflow, chosen)
        handle._task = loop.create_task(self._start(run_id, None if written else row), name=f"start {run_id}",
                                        context=context)
        return handle

    async def _start(self, run_id: str, row: dict[str, Any] | None) -> None:
        """The run's workflow started, after its row (`row`: still to be written, on a thread)."""
        assert self.db is not None and self.host is not None
        if row is not None:
            try:
                await asyncio.to_thread(self.db.create_run, **row)
            except Exception as exc:  # not recorded: the run failed to start, as its waiters are told
                prepared = self._prepared.pop(run_id, None)
                if prepared is not None:
                    prepared[0]._end_unexecuted(RunStatus.FAILED, str(exc), self.clock.now(), exc)
                return
        await self.host.start(run_id)

    def queue_run(self, workflow: CompiledWorkflow, *, flow: str | None = None, input: str = "",
                  task: str | None = None, script: Script | None = None) -> str:
        """Record a run and queue it for the workers (`run --detach`), in one transaction;
        returns its id. Nothing of it runs in this process."""
        from engine.durable.database import QUEUED

        assert self.db is not None and self.host is not None
        host = self.host
        run_id = f"r{uuid.uuid4().hex[:12]}"
        handle = RunHandle(run_id, task or workflow.name, workflow.name, flow, input, started_at=self.clock.now())
        chosen = script if script is not None else self.script
        self.db.create_run(**self._run_row(run_id, handle, workflow, chosen), status=QUEUED, owner=None, heartbeat=None,
                           then=lambda conn: host.enqueue_in(conn, run_id))
        return run_id

    def _run_row(self, run_id: str, handle: RunHandle, workflow: CompiledWorkflow, script: Script | None) -> dict[str, Any]:
        """What the database keeps of a run so that any process can execute or continue it."""
        return dict(
            run_id=run_id, task=handle.task, workflow=workflow.name, path=str(Path(workflow.path).resolve()),
            flow=handle.flow, input=handle.input, script=_file_or_none(script.path if script is not None else None),
            rules=_file_or_none(getattr(self.rules, "source", None)),
            workspace=str(handle.workspace or self.workspace), started=handle.started_at,
        )

    async def resume_run(self, run_id: str) -> RunHandle | None:
        """Continue an interrupted durable run in this process (None: another process has it)."""
        assert self.host is not None
        arrived = self._arrivals.setdefault(run_id, asyncio.get_running_loop().create_future())
        try:
            if not await self.host.resume(run_id):
                return None
            # DBOS hands the run back through this process's queue, to execute_durable.
            return await asyncio.wait_for(asyncio.shield(arrived), RESUME_TIMEOUT)
        except TimeoutError:
            raise RuntimeError(f"run {run_id} did not start again within {RESUME_TIMEOUT:g} s") from None
        finally:
            self._arrivals.pop(run_id, None)

    def run(self, run_id: str) -> RunHandle | None:
        return next((h for h in self.runs if h.id == run_id), None)

    def expects(self, run_id: str) -> bool:
        """Whether this engine started `run_id` or holds it parked: its workflow's body is this
        engine's to execute."""
        if run_id in self._prepared or run_id in self._arrivals:
            return True
        handle = self.run(run_id)
        return handle is not None and handle.parked

    async def execute_durable(self, run_id: str) -> None:
        """The body of a run's workflow (engine/durable/host.py): a new run, or one continued
        after a crash, which replays its recorded steps and goes on from the first unrecorded."""
        assert self.db is not None and self.host is not None
        prepared = self._prepared.pop(run_id, None)
        parked = self.run(run_id) if prepared is None else None
        if parked is not None and parked.parked:
            # Parked here and claimed back on its decision (engine/services/parking.py): the same
            # handle goes on (a console's list and log, `run --wait`'s wait), its recorded
            # events replayed without being shown again.
            BACKGROUND.set(True)
            handle, parked.parked, parked.detached = parked, False, False
            workflow, script = self._from_row(run_id)
        elif prepared is None:
            BACKGROUND.set(True)  # a run a worker dequeued (start() marks its own): escalations come first
            self.db.claim_queued(run_id, self.host.owner)  # a queued run a worker took: it is this process's now
            self.host.keep_beating()
            if self.host.draining:  # a worker stopping: the run is left, owned by nobody alive, for another one
                raise asyncio.CancelledError(f"{run_id}: this worker is stopping")
            row = self.db.get_run(run_id)
            if row is None:
                raise LookupError(f"no run {run_id} in {self.db.url}")
            workflow, script = self._from_row(run_id, row)
            # the run's own workspace: a worker's folder is not the run's (an ACP agent's cwd, its files)
            handle = RunHandle(run_id, row["task"], row["workflow"], row["flow"], row["input"], started_at=row["started"],
                               workspace=Path(row["workspace"]) if row["workspace"] else None)
            handle.events = [RunEvent(run_id, e.pop("type"), e.pop("time"), e) for e in self.db.events_of(run_id)]
            self.runs.append(handle)
        else:
            handle, workflow, script = prepared
        handle._task = asyncio.current_task()
        arrived = self._arrivals.get(run_id)
        if arrived is not None and not arrived.done():
            arrived.set_result(handle)
        await self._execute(handle, workflow, script, durable=True)

    async def park(self, run_id: str) -> bool:
        """End the execution of a durable run waiting for a person here, keeping its handle
        (`parked`) and its escalations listed by the broker (`hold_run`: answerable, deadlines
        armed): nothing is recorded as its end, and `execute_durable` continues it with this
        handle. False when it does not wait here (answered meanwhile, over, not parkable). The
        checks and the cancel happen with no await between them."""
        handle = self.run(run_id)
        task = handle._task if handle is not None else None
        if (handle is None or not handle.parkable or handle.detached or handle.status is not RunStatus.WAITING
                or task is None or task.done() or not self.broker.hold_run(run_id)):
            return False
        handle.detached = handle.parked = True
        task.cancel()
        await asyncio.wait([task])
        # Nothing of the execution stays reachable: the task (its coroutine's frames), the
        # CancelledError and its traceback that the runner kept as the run's exception.
        handle._task, handle.exception = None, None
        handle._on_status = handle._on_tokens = _ignored  # set again when it goes on (`_execute`)
        handle._cancel = lambda: self._end_parked(handle)
        return True

    def _end_parked(self, handle: RunHandle) -> None:
        """A parked run cancelled here (the console's cancel, `run --wait` stopped): its
        escalations withdrawn, its row cancelled where it is, its waiters released."""
        if not handle.parked:
            return
        handle.parked = False
        self.broker.cancel_run(handle.id)
        now = self.clock.now()
        if self.db is not None:
            self.db.update_run(handle.id, status=RunStatus.CANCELLED.value, error="cancelled", finished=now)
        handle._end_unexecuted(RunStatus.CANCELLED, "cancelled", now)

    def _from_row(self, run_id: str, row: dict[str, Any] | None = None) -> tuple[CompiledWorkflow, Script | None]:
        """The workflow and script a recorded run was started with, as any process reads them."""
        from engine.runtime.script import load_script

        assert self.db is not None
        row = row if row is not None else self.db.get_run(run_id)
        if row is None:
            raise LookupError(f"no run {run_id} in {self.db.url}")
        return self.load(Path(row["path"])), load_script(row["script"]) if row["script"] else None

    def detach(self, run_ids: "set[str] | None" = None) -> list["asyncio.Task[None]"]:
        """Stop this process's runs (or those of `run_ids`) without ending them: durable runs
        stay in the database as they are (running, waiting) and continue the next time escalate
        opens or resumes them, here or in another process. Returns the runs' tasks, cancelled
        and unwinding (their commands are killed with them)."""
        stopping = []
        for handle in self.runs:
            if run_ids is not None and handle.id not in run_ids:
                continue
            if not handle.status.finished and not handle.detached:
                handle.detached = True
                self.broker.forget_run(handle.id)
                if handle._task is not None and not handle._task.done():
                    handle._task.cancel()
                    stopping.append(handle._task)
        return stopping

    async def _execute(self, handle: RunHandle, workflow: CompiledWorkflow, script: Script | None, *, durable: bool = False) -> None:
        from engine.runtime.runner import execute_run

        run_id = handle.id
        db = self.db if durable else None
        def record(seq: int, event: RunEvent) -> None:
            assert db is not None
            db.add_event(run_id, seq, event.type, event.time, event.to_json())

        if db is not None:
            handle._on_status = lambda status: db.update_run(run_id, status=status.value)
            handle._on_tokens = lambda tokens: db.set_tokens(run_id, tokens)
        handle.parkable = db is not None and not any(getattr(spec, "acp_command", None) for spec in workflow.cls.MODELS.values())
        sink = EventSink(run_id, self.events_file, record=record if db is not None else None, replayed=len(handle.events))
        sink.subscribe(lambda event: self._fan_out(handle, event))
        self._sinks[run_id] = sink
        handle._cancel = lambda: self.broker.cancel_run(run_id)
        try:
            await execute_run(self, handle, workflow, sink, script, durable=durable)
        finally:
            self._sinks.pop(run_id, None)
            if db is not None and not handle.detached:
                db.update_run(run_id, status=handle.status.value, result=_json(handle.result), error=handle.error,
                              finished=handle.finished_at)
            if not handle.detached or handle.status.finished:
                handle._release()


def _file_or_none(path: str | None) -> str | None:
    """A file the run was started with, kept so that it can continue in another process."""
    return str(Path(path).resolve()) if path and Path(path).is_file() else None


def _json(value: Any) -> str:
    import json

    return json.dumps(value, default=str)


_WARM_LOCK = threading.Lock()
_warmed = False


def warm_up() -> None:
    """Run one scripted call on a private loop, once per process (later calls return at once).
    ADK's imports and first-use costs (1-4 s) are paid here, on the caller's thread, and not by
    a run's first model turn, which would freeze whatever shares its loop."""
    global _warmed
    with _WARM_LOCK:
        if _warmed:
            return
        with warming():
            _warm_up()
            # What ADK made (modules, pydantic schemas: ~180k objects) lives as long as the
            # process: out of the collector's full passes, each 100-150 ms over them with runs
            # going. Frozen before `warming` gives Python's thresholds back: after it, the
            # young passes counted meanwhile made the next pass a middle one over all of it
            # (65-70 ms of CPU; the ~200 objects of garbage it found are frozen instead).
            gc.freeze()
        _warmed = True


warm_up_with(warm_up)  # what the first model turn of the process awaits (engine/runtime/adk_setup.py)


def _warm_up() -> None:
    import tempfile

    from engine.escalation.broker import EscalationBroker
    from engine.kernel.clock import RealClock
    from engine.lang.compiler import compile_source, workflow_class
    from engine.runtime.script import Reply, Script
    from rules import default_rules

    # The script is made here, not read: reading one checks it against rules/schema.py's pydantic
    # models, whose import and build (40-60 ms of CPU) a process with real models never needs.
    script = Script({"w": (Reply("text", text="ready"),)}, "warm-up")

    async def one_run() -> None:
        clock = RealClock()
        with tempfile.TemporaryDirectory(prefix="escalate-warm-") as folder:
            engine = Engine(rules=default_rules(), broker=EscalationBroker(clock), clock=clock,
                            script=script, workspace=Path(folder))
            cls = workflow_class(compile_source(_WARM_UP_SOURCE, Path("warm-up.sr")))
            handle = engine.start_run(CompiledWorkflow(Path("warm-up.sr"), "warm-up", cls), input="go")
            await handle.wait()
            if handle.status is not RunStatus.DONE:
                raise RuntimeError(f"the runtime's warm-up run ended {handle.status.value}: {handle.error}")

    asyncio.run(one_run())
