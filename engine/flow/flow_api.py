"""The interface generated flow code calls: every effect of a flow goes through a FlowContext.

Generated code is deterministic between these calls; agent calls, LLM calls and human waits
each go through exactly one method here, which is the seam where runs become durable later.
Pure helpers (normalized equality, operators, interpolation, property access) live in
engine.flow.flowlib and have no side effects.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Protocol


@dataclass(frozen=True)
class CallResult:
    """The outcome of `run agent`, `run FLOW` or `call llm`.

    `escalated` is true when the prompt-level `escalate if` condition of the called agent (or of
    any agent reached from it through delegate/use, or inside the called flow) matched.
    """

    value: Any
    escalated: bool = False


class FlowContext(Protocol):
    """One per run. Variables are flat per run (`vars`: the run's table as the current flow or
    handler sees it, behind its own `$input` or message)."""

    @property
    def vars(self) -> MutableMapping[str, Any]: ...

    def get(self, name: str, line: int) -> Any:
        """Read `$name`; raises FlowError("variable $name is not set", line) when unset."""

    async def run_agent(self, agent: str, args: list[Any], *, history: Any = None, line: int) -> CallResult:
        """`run agent A [with e] [history $h]` and the seed form `run agent A e1 e2` (args joined)."""

    async def run_flow(self, flow: str, args: list[Any], *, line: int) -> CallResult:
        """`run FLOW [with e]`: the flow runs with its own `$input`."""

    async def call_llm(self, prompt: str, args: list[Any], *, model: str | None, line: int) -> CallResult:
        """`call llm P [with e] [using model "m"]`."""

    async def escalate_to_human(self, message: Any, *, line: int, options: Any = None) -> str:
        """`escalate to human e [with options L]`: a real pause for a human; the answer's text
        (the chosen option's label) is the value."""

    async def log(self, message: Any, *, line: int) -> None: ...

    async def notify(self, message: Any, *, line: int) -> None: ...

    async def call_function(self, name: str, args: list[Any], *, line: int) -> Any:
        """`lib.fn(args)`, `fn(args)` as expressions or statements."""

    async def parallel(self, branches: list[Callable[[], Awaitable[None]]], *, line: int) -> None:
        """`parallel do ... end`: runs each branch concurrently; waits for all."""

    async def tick(self, line: int) -> None:
        """Checkpoint at each loop iteration: lets a cancelled run stop inside `loop do`."""

    # Handler-only guardrails (on input/output/tool-call/tool-result).
    def guardrail(self, name: str, *, line: int) -> bool:
        """A named guardrail as a condition: does the message in flight trip it? (never for an
        unknown name, which the run's log mentions once)"""

    def mask(self, guardrail: str, *, line: int) -> None: ...

    def block(self, condition: Any, *, line: int) -> None: ...

    def warn(self, message_or_condition: Any, *, line: int) -> None: ...

    def retry_with(self, value: Any, condition: Any, *, line: int) -> None: ...


# Errors raised by generated code and the runtime. Abort and stop are not failures: `on
# failure` never catches them.


class FlowError(Exception):
    """A failure inside a flow step (agent error, `fail "msg"`, missing variable)."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


class AbortFlow(Exception):
    """`abort` or `on escalate abort`: the run ends as aborted (exit 3)."""

    def __init__(self, message: str = "aborted", line: int = 0) -> None:
        super().__init__(message)
        self.line = line


class StopTask(Exception):
    """A rule or a timeout default said `stop`: the task ends as stopped (exit 3)."""


class RetryStep(Exception):
    """`retry step e` inside `on failure`: re-run the failed step with a new input."""

    def __init__(self, value: Any, line: int = 0) -> None:
        super().__init__("retry step")
        self.value = value
        self.line = line


IterableValue = Iterable[Any]
