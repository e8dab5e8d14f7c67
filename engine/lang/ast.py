"""AST of a .sr file: plain dataclasses, each with its source position (1-based line, column)."""

from __future__ import annotations

from typing import Any, Callable

# Nodes are declared like dataclasses (annotated fields, defaults in order) but their __init__
# methods are generated for all classes in one `exec` at the end of this module: importing it is
# on `escalate check`'s start-up path, and dataclasses cost ~0.5 ms per class there.
_PENDING: list[type] = []


class field:  # noqa: N801 - reads like dataclasses.field
    """A per-instance default: `x: dict = field(default_factory=dict)`."""

    def __init__(self, *, default_factory: Callable[[], Any]) -> None:
        self.default_factory = default_factory


def _node(cls: type) -> type:
    _PENDING.append(cls)
    return cls


class Node:
    _fields: tuple[str, ...] = ()
    line: int
    column: int

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({inner})"


_PENDING.append(Node)


# ------------------------------------------------------------------ expressions

@_node
class Expr(Node):
    pass


@_node
class Literal(Expr):
    value: Any  # str | int | float | bool | None


@_node
class Text(Expr):
    """A double-quoted string or prompt body: literal parts, `${expr}` and soft `$var.path`."""

    parts: list["str | Expr"]


@_node
class SoftVar(Expr):
    """`$name.path` written inside text: the value if set at run time, else the text itself."""

    name: str
    path: tuple[str, ...]
    raw: str


@_node
class Var(Expr):
    name: str
    dollar: bool = True  # `$x` or bare `x`


@_node
class GetAttr(Expr):
    target: Expr
    attr: str


@_node
class Call(Expr):
    func: str  # dotted name, validated by the transformer
    args: list[Expr]


@_node
class BinOp(Expr):
    op: str  # + - * / % == != < > <= >= ~ contains and or
    left: Expr
    right: Expr


@_node
class Not(Expr):
    operand: Expr


@_node
class Neg(Expr):
    operand: Expr


@_node
class ListLit(Expr):
    items: list[Expr]


@_node
class ObjectLit(Expr):
    entries: list[tuple[str, Expr]]


@_node
class InitialPrompt(Expr):
    pass


@_node
class ImplicitField(Expr):
    """`.field.sub` inside `filter ... where`: a field of the current element."""

    path: tuple[str, ...]


@_node
class Filter(Expr):
    source: Expr
    condition: Expr


@_node
class PreserveItem(Expr):
    """Policy list items `last N messages`, `tool results`."""

    kind: str  # "last" | "tool_results"
    count: int = 0


# ------------------------------------------------------------------ statements

@_node
class Stmt(Node):
    pass


@_node
class EscalationHandler(Node):
    action: str  # "return" | "continue" | "abort"
    value: Expr | None = None


@_node
class RunAgent(Expr):
    agent: str
    args: list[Expr]
    history: Expr | None = None
    handler: EscalationHandler | None = None
    with_form: bool = False
    name_at: tuple[int, int] | None = None  # where the agent's name is written (for the caret)


@_node
class RunFlow(Expr):
    flow: str
    args: list[Expr]
    handler: EscalationHandler | None = None
    name_at: tuple[int, int] | None = None


@_node
class CallLlm(Expr):
    prompt: str
    args: list[Expr]
    model: str | None = None
    name_at: tuple[int, int] | None = None


@_node
class EscalateHuman(Expr):
    message: Expr | None
    options: Expr | None = None  # `with options [...]`: labels, or {id, label, description, recommended}


@_node
class Assign(Stmt):
    target: Expr  # Var or GetAttr chain ending in a Var
    value: Expr


@_node
class ExprStmt(Stmt):
    expr: Expr  # RunAgent | RunFlow | CallLlm | EscalateHuman | Call


@_node
class Return(Stmt):
    value: Expr | None


@_node
class Log(Stmt):
    message: Expr
    notify: bool = False


@_node
class Push(Stmt):
    value: Expr
    target: Expr
    role: str | None = None


@_node
class Continue(Stmt):
    pass


@_node
class Abort(Stmt):
    message: Expr | None = None


@_node
class Fail(Stmt):
    message: Expr | None = None


@_node
class RetryStep(Stmt):
    value: Expr


@_node
class RetryWith(Stmt):
    value: Expr
    condition: Expr


@_node
class Mask(Stmt):
    guardrail: str


@_node
class Block(Stmt):
    condition: Expr


@_node
class Warn(Stmt):
    value: Expr
    is_condition: bool


@_node
class If(Stmt):
    branches: list[tuple[Expr, list[Stmt]]]
    orelse: list[Stmt] | None = None


@_node
class For(Stmt):
    var: str
    iterable: Expr
    body: list[Stmt]


@_node
class Loop(Stmt):
    max: Expr | None
    body: list[Stmt]


@_node
class Parallel(Stmt):
    body: list[Stmt]


@_node
class MatchCase(Node):
    pattern: Expr | None  # None: else
    normalized: bool
    body: Stmt


@_node
class Match(Stmt):
    subject: Expr
    cases: list[MatchCase]


@_node
class OnFailure(Stmt):
    body: list[Stmt]


# ------------------------------------------------------------------ definitions

@_node
class Definition(Node):
    pass


@_node
class Import(Definition):
    path: str | None  # None: `import streetrace` (the standard library, built in)
    name: str | None = None  # `import NAME from ./x.sr`
    std: str | None = None


@_node
class Model(Definition):
    name: str
    provider: str | None = None
    model_id: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    prop_lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    block: bool = False
    acp_command: str | None = None  # `model NAME = acp "CMD ARGS"`: an ACP agent's command
    acp_at: tuple[int, int] = (0, 0)  # where that command's string starts


@_node
class SchemaField(Node):
    name: str
    type: "TypeRef"


@_node
class TypeRef(Node):
    name: str  # string int float bool list, or a schema name
    item: "TypeRef | None" = None
    optional: bool = False


@_node
class Schema(Definition):
    name: str
    fields: list[SchemaField]


@_node
class Tool(Definition):
    name: str
    kind: str  # "builtin" | "mcp" | "ref"
    target: str | None
    auth: tuple[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    prop_lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    block: bool = False
    acp_command: str | None = None  # `model NAME = acp "CMD ARGS"`: an ACP agent's command
    acp_at: tuple[int, int] = (0, 0)  # where that command's string starts


@_node
class RetryPolicy(Definition):
    name: str
    times: int
    backoff: str | None = None


@_node
class TimeoutPolicy(Definition):
    name: str
    amount: float
    unit: str


@_node
class Policy(Definition):
    name: str
    properties: list[tuple[str, Expr, int, int]]


@_node
class EscalationCond(Node):
    op: str  # "~" "==" "!=" "contains" "expr"
    value: str | None = None
    expr: Expr | None = None
    source: str = ""


@_node
class Prompt(Definition):
    name: str
    body: Text | None
    model: str | None = None
    expecting: str | None = None
    expecting_list: bool = False
    inherit: str | None = None
    escalation: EscalationCond | None = None
    modifiers: list[tuple[str, Any, int, int]] = field(default_factory=list)


@_node
class AgentProp(Node):
    key: str
    values: list[Any]  # str names / dotted names, Literal strings, (number, unit) tuples
    value_at: list[tuple[int, int]] = field(default_factory=list)  # each value's position


@_node
class Handler(Definition):
    timing: str
    event: str
    body: list[Stmt]


@_node
class Agent(Definition):
    name: str  # "" for the unnamed agent
    props: list[AgentProp]
    handlers: list[Handler]


@_node
class Flow(Definition):
    name: str
    body: list[Stmt]


@_node
class Module(Node):
    file: str
    definitions: list[Definition]
    version: str | None = None
    # The deepest statement nesting, expression nesting within a statement, and elif/when chain:
    # how close the generated code may come to Python's own limits (compiler.py).
    nesting: tuple[int, int, int] = (0, 0, 0)


def _build_inits() -> None:
    """One __init__ per node class (positional and keyword, in field order), compiled at once."""
    src: list[str] = []
    env: dict[str, Any] = {}
    for k, cls in enumerate(_PENDING):
        names: list[str] = []
        defaults: dict[str, Any] = {}
        for base in reversed(cls.__mro__):
            for name in base.__dict__.get("__annotations__", {}):
                if name.startswith("_"):
                    continue
                if name not in names:
                    names.append(name)
                if name in base.__dict__:
                    defaults[name] = base.__dict__[name]
        cls._fields = tuple(names)
        params, body = [], []
        for name in names:
            if name not in defaults:
                params.append(name)
                body.append(f"    self.{name} = {name}")
            elif isinstance(defaults[name], field):
                env[f"_f{k}_{name}"] = defaults[name].default_factory
                params.append(f"{name}=_MISSING")
                body.append(f"    self.{name} = _f{k}_{name}() if {name} is _MISSING else {name}")
            else:
                env[f"_d{k}_{name}"] = defaults[name]
                params.append(f"{name}=_d{k}_{name}")
                body.append(f"    self.{name} = {name}")
        src.append(f"def _init{k}(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]))
    env["_MISSING"] = object()
    exec("\n".join(src), env)  # our own field names only
    for k, cls in enumerate(_PENDING):
        cls.__init__ = env[f"_init{k}"]
        for name in cls._fields:  # class-level defaults would shadow nothing, but keep classes clean
            if isinstance(cls.__dict__.get(name), field):
                delattr(cls, name)
    _PENDING.clear()


_build_inits()
