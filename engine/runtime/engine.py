"""The engine API used by `escalate run` and the console (docs/architecture.md).

One Engine per process: it compiles workflows, starts runs as asyncio tasks on the running loop,
and fans every run's events out to subscribers. Runs share only the escalation desk, broker and
agent policy (all keyed by run); each has its own ADK sessions, script cursor and event sink.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import uuid
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable

from engine.escalation.clock import Clock
from engine.lang.compiler import CompileFailed, load_workflow
from engine.runtime.events import EventSink, RunEvent
from engine.runtime.priority_loop import BACKGROUND
from engine.runtime.script import Script
from engine.runtime.spec import WorkflowBase
from engine.text_safety import utf8_text

log = logging.getLogger("escalate.runtime")

__all__ = ["CompileFailed", "CompiledWorkflow", "Engine", "RunEvent", "RunHandle", "RunStatus", "warm_up"]

# One scripted agent call: enough to import and first-use everything a run touches in ADK.
_WARM_UP_SOURCE = 'prompt p: """Warm up."""\nagent w:\n    instruction p\nflow main:\n    $x = run agent w $input\n    return $x\n'
_WARM_UP_SCRIPT = "agents:\n  w: [ready]\n"


class RunStatus(str, Enum):
    RUNNING = "running"
    WAITING = "waiting"  # on a human
    DONE = "done"
    FAILED = "failed"
    STOPPED = "stopped"
    ABORTED = "aborted"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self not in (RunStatus.RUNNING, RunStatus.WAITING)


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

    def cancel(self) -> None:
        """Stop the run: its agents stop and its pending escalations are withdrawn."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self._cancel()

    async def wait(self) -> RunStatus:
        """Wait for the end of the run (whoever waits is not cancelled by the run's cancel)."""
        if self._task is not None and not self._task.done():
            try:
                await asyncio.shield(self._task)
            except asyncio.CancelledError:
                if not self._task.done():  # the waiter itself was cancelled
                    raise
        return self.status

    def _set_waiting(self, waiting: bool) -> None:
        self._waiting += 1 if waiting else -1
        if not self.status.finished:
            self.status = RunStatus.WAITING if self._waiting > 0 else RunStatus.RUNNING


class Engine:
    def __init__(
        self,
        *,
        rules: Any,
        broker: Any,
        clock: Clock,
        script: Script | None = None,
        workspace: Path | None = None,
        store: Path | None = None,
        events_file: Path | None = None,
    ) -> None:
        from engine.escalation.agent_policy import AgentEscalationHandler
        from engine.escalation.desk import EscalationDesk
        from engine.runtime.adk_setup import prepare_adk

        prepare_adk()
        self.rules = rules
        self.broker = broker
        self.clock = clock
        self.script = script
        self.workspace = (workspace or Path.cwd()).resolve()
        self.store = store
        self.events_file = events_file  # `escalate run --events`: every run's events appended
        self.runs: list[RunHandle] = []
        self.agent_policy = AgentEscalationHandler(rules.policy, clock)
        self.desk = EscalationDesk(broker, rules, clock, emit=self._emit_for_run)
        self._subscribers: list[Callable[[RunEvent], None]] = []
        self._sinks: dict[str, EventSink] = {}
        self._seq = itertools.count(1)

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
    ) -> RunHandle:
        """Start a run as a task on the running loop; returns at once."""
        from engine.runtime.runner import execute_run

        run_id = f"r{next(self._seq)}-{uuid.uuid4().hex[:6]}"
        handle = RunHandle(run_id, task or workflow.name, workflow.name, flow, input, started_at=self.clock.now())
        sink = EventSink(run_id, self.events_file)
        sink.subscribe(lambda event: self._fan_out(handle, event))
        self._sinks[run_id] = sink
        handle._cancel = lambda: self.broker.cancel_run(run_id)
        self.runs.append(handle)
        chosen = script if script is not None else self.script

        async def main() -> None:
            try:
                await execute_run(self, handle, workflow, sink, chosen)
            finally:
                self._sinks.pop(run_id, None)

        context = contextvars.copy_context()
        context.run(BACKGROUND.set, True)  # on a console's PriorityLoop, its work comes first
        handle._task = asyncio.get_running_loop().create_task(main(), name=f"run {run_id}", context=context)
        return handle



def warm_up() -> None:
    """Run one scripted call on a private loop. ADK's imports and first-use costs (2-4 s) are
    paid here, where the caller chooses (the console: on a thread after its first frame), and
    not by the user's first run, which would freeze whatever shares its loop."""
    import tempfile

    from engine.escalation.broker import EscalationBroker
    from engine.escalation.clock import RealClock
    from engine.lang.compiler import compile_source, workflow_class
    from engine.runtime.script import parse_script
    from rules import default_rules

    async def one_run() -> None:
        clock = RealClock()
        with tempfile.TemporaryDirectory(prefix="escalate-warm-") as folder:
            engine = Engine(rules=default_rules(), broker=EscalationBroker(clock), clock=clock,
                            script=parse_script(_WARM_UP_SCRIPT, "warm-up"), workspace=Path(folder))
            cls = workflow_class(compile_source(_WARM_UP_SOURCE, Path("warm-up.sr")))
            handle = engine.start_run(CompiledWorkflow(Path("warm-up.sr"), "warm-up", cls), input="go")
            await handle.wait()
            if handle.status is not RunStatus.DONE:
                raise RuntimeError(f"the runtime's warm-up run ended {handle.status.value}: {handle.error}")

    asyncio.run(one_run())
