"""What a compiled workflow declares: the specs that generated modules instantiate.

This module is the contract between the code generator (engine.lang.codegen) and the runtime
(engine.runtime.*). It is pure data: no ADK, no I/O, cheap to import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, ClassVar

# A prompt body or expression evaluated at run time against the flow context.
ContextFn = Callable[[Any], Any]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    provider: str | None = None  # "anthropic", "openai", "gemini", ...; None: a bare model id
    model_id: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    max_input_tokens: int | None = None
    base_url: str | None = None  # an OpenAI-compatible (or Gemini) endpoint, e.g. a local server
    acp_command: str | None = None  # `model NAME = acp "CMD ARGS"`: an ACP agent answers instead


def acp_argv(command: str) -> list[str]:
    """An ACP agent's command as words, split as a POSIX shell would (no shell runs it); raises
    ValueError saying why it cannot be run. `escalate check` and the runtime split it alike."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise ValueError(f"the ACP command cannot be split into words ({str(exc).lower()})") from None
    if not words:
        raise ValueError("the ACP command is empty")
    return words


@dataclass(frozen=True)
class TypeSpec:
    """A schema field type: `string int float bool`, a schema name, `list[T]`, `T?`."""

    kind: str  # "string" | "int" | "float" | "bool" | "schema" | "list"
    schema: str | None = None  # for kind == "schema"
    item: "TypeSpec | None" = None  # for kind == "list"
    optional: bool = False


@dataclass(frozen=True)
class SchemaSpec:
    name: str
    fields: dict[str, TypeSpec]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    kind: str  # "builtin" | "mcp" | "ref"
    target: str  # dotted builtin name (e.g. "streetrace.fs") or MCP url
    auth: tuple[str, str] | None = None  # ("bearer" | "basic", value)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RetrySpec:
    name: str
    times: int
    backoff: str | None = None  # "exponential" | "linear" | "fixed"


@dataclass(frozen=True)
class TimeoutSpec:
    name: str
    seconds: float


@dataclass(frozen=True)
class PolicySpec:
    name: str
    properties: dict[str, Any]


@dataclass(frozen=True)
class EscalationSpec:
    """A prompt's `escalate if` condition (seeds 000/001)."""

    op: str  # "~" | "==" | "!=" | "contains" | "expr"
    value: str | None = None  # the literal for the four operators
    # For op == "expr": evaluates the condition; receives (ctx, output). `$output` is `output`.
    check: Callable[[Any, Any], Any] | None = None
    source: str = ""  # the condition as written, for events and messages


@dataclass(frozen=True)
class PromptSpec:
    name: str
    body: ContextFn | None  # ctx -> str (interpolation applied); None: declared without body
    model: str | None = None
    expecting: str | None = None  # schema name
    expecting_list: bool = False  # `expecting Schema[]`
    inherit: str | None = None  # variable name
    escalation: EscalationSpec | None = None
    line: int = 0


@dataclass(frozen=True)
class HandlerSpec:
    """`on|after start|input|output|tool-call|tool-result do ... end`."""

    timing: str  # "on" | "after"
    event: str  # "start" | "input" | "output" | "tool-call" | "tool-result"
    fn: Callable[[Any], Awaitable[None]]  # async (ctx) -> None
    line: int = 0


@dataclass(frozen=True)
class AgentSpec:
    name: str
    instruction: str | None = None  # prompt name (system instruction)
    prompt: str | None = None  # prompt name used as the agent's first user message
    tools: tuple[str, ...] = ()
    delegate: tuple[str, ...] = ()
    use: tuple[str, ...] = ()
    description: str | None = None
    retry: str | None = None  # retry policy name
    timeout: str | None = None  # timeout policy name
    timeout_seconds: float | None = None  # literal `timeout N unit`
    produces: str | None = None  # variable that receives the output
    history: str | None = None  # history policy name
    handlers: tuple[HandlerSpec, ...] = ()
    line: int = 0


class WorkflowBase:
    """Base of every generated workflow class. Class attributes are filled by the generator.

    Flows are async methods `async def <method>(self, ctx) -> Any` (a flow's
    `$input` is set in `ctx` by whoever runs it); FLOWS maps each
    `.sr` flow name to its method name (names may contain characters Python forbids).
    """

    SOURCE: ClassVar[str] = ""
    SOURCE_SHA256: ClassVar[str] = ""
    MODELS: ClassVar[dict[str, ModelSpec]] = {}
    SCHEMAS: ClassVar[dict[str, SchemaSpec]] = {}
    TOOLS: ClassVar[dict[str, ToolSpec]] = {}
    RETRIES: ClassVar[dict[str, RetrySpec]] = {}
    TIMEOUTS: ClassVar[dict[str, TimeoutSpec]] = {}
    POLICIES: ClassVar[dict[str, PolicySpec]] = {}
    PROMPTS: ClassVar[dict[str, PromptSpec]] = {}
    AGENTS: ClassVar[dict[str, AgentSpec]] = {}  # unnamed agent: key "" (empty string)
    FLOWS: ClassVar[dict[str, str]] = {}  # flow name -> method name
    HANDLERS: ClassVar[tuple[HandlerSpec, ...]] = ()  # top-level handlers

    def entry(self, flow: str | None = None) -> tuple[str, str]:
        """The run's entry per the contract: ("flow", name) or ("agent", name).

        Without a flow: `flow main`, else `flow default`, else agent `main`, else the unnamed
        agent, else the only agent. Raises LookupError with a readable message otherwise.
        """
        if flow is not None:
            if flow in self.FLOWS:
                return ("flow", flow)
            raise LookupError(f"no flow named {flow!r} (flows: {', '.join(self.FLOWS) or 'none'})")
        for name in ("main", "default"):
            if name in self.FLOWS:
                return ("flow", name)
        if "main" in self.AGENTS:
            return ("agent", "main")
        if "" in self.AGENTS:
            return ("agent", "")
        if len(self.AGENTS) == 1:
            return ("agent", next(iter(self.AGENTS)))
        raise LookupError("no entry point: define `flow main`, `flow default` or agent `main`")
