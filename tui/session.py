"""The console's state without the UI: workflows, the broker, the engine, and what was decided.

The Textual app is a view over one `ConsoleSession`. Nothing here imports Textual, and ADK is
only reached through `open_engine()`, which the app calls after its first frame.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from engine.escalation.broker import CANCELLED, RAISED, BrokerEvent, EscalationBroker
from engine.escalation.clock import Clock, RealClock
from engine.escalation.model import Decision, PendingEscalation, Response

ENGINE_MODULE = "engine.runtime.engine"


@dataclass
class WorkflowEntry:
    """One `.sr` file of the workspace and the script that answers its agents."""

    path: Path
    script: Path | None = None
    compiled: Any = None  # the engine's CompiledWorkflow once loaded
    error: str | None = None  # first diagnostic line when it does not compile

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def flows(self) -> list[str]:
        return list(self.compiled.flows) if self.compiled is not None else []


@dataclass
class EscalationRecord:
    """One escalation as the history screen shows it: asked, then decided or withdrawn."""

    pending: PendingEscalation
    decision: Decision | None = None
    withdrawn: bool = False

    @property
    def state(self) -> str:
        if self.decision is not None:
            return "decided"
        return "withdrawn" if self.withdrawn else "pending"


@dataclass
class ConsoleSession:
    workflows: list[WorkflowEntry]
    rules: Any  # rules.Rules; or a known-good rules file's Path (None: the shipped rules), loaded with the engine
    clock: Clock = field(default_factory=RealClock)
    store: Path | None = None
    workspace: Path | None = None
    broker: EscalationBroker = field(init=False)
    engine: Any = field(init=False, default=None)  # engine.runtime.engine.Engine once opened
    records: dict[str, EscalationRecord] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.broker = EscalationBroker(self.clock)
        self.broker.subscribe(self._record)

    # ---- the engine (ADK) is opened after the first frame --------------------------------------

    @staticmethod
    def preload() -> None:
        """Import the runtime (ADK, about a second): run it off the UI's critical path."""
        importlib.import_module(ENGINE_MODULE)

    def open_engine(self) -> None:
        """Create the engine on the broker and compile every workflow (errors kept per entry)."""
        module = importlib.import_module(ENGINE_MODULE)
        if self.rules is None or isinstance(self.rules, Path):  # shipped rules: parsed after the first frame
            from rules import load_rules  # load_rules(None) gives the shipped defaults

            self.rules = load_rules(self.rules)
        self.engine = module.Engine(
            rules=self.rules, broker=self.broker, clock=self.clock, workspace=self.workspace, store=self.store
        )
        for entry in self.workflows:
            try:
                entry.compiled = self.engine.load(entry.path)
            except Exception as exc:  # CompileFailed and unreadable files: shown, not fatal
                entry.error = _first_line(exc)

    def subscribe_runs(self, callback: Callable[[Any], None]) -> Callable[[], None]:
        return self.engine.subscribe(callback)

    def start_run(self, entry: WorkflowEntry, *, flow: str | None = None, input: str = "") -> Any:
        """Start `entry` on the engine; the run's task lives on the running asyncio loop."""
        if self.engine is None or entry.compiled is None:
            raise RuntimeError(entry.error or f"{entry.name} is not loaded yet")
        script = _load_script(entry.script) if entry.script else None
        return self.engine.start_run(entry.compiled, flow=flow, input=input, script=script)

    @property
    def runs(self) -> list[Any]:
        return list(self.engine.runs) if self.engine is not None else []

    def run(self, run_id: str | None) -> Any:
        """The RunHandle with this id, or None."""
        if self.engine is None or run_id is None:
            return None
        return next((h for h in reversed(self.engine.runs) if h.id == run_id), None)

    # ---- decisions ---------------------------------------------------------------------------

    def answer(self, escalation_id: str, response: Response) -> Decision:
        """A human's answer to exactly this escalation (the broker refuses stale ones)."""
        return self.broker.answer(escalation_id, response)

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
    def agent_policy(self) -> Any:
        """The seed 002 handler (history and metrics), once the engine exists."""
        return getattr(self.engine, "agent_policy", None)


def _load_script(path: Path) -> Any:
    from engine.runtime.script import load_script

    return load_script(path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
