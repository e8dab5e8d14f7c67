"""AST of a .sr file: plain dataclasses, each with its source position (1-based line, column)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    line: int
    column: int


# ------------------------------------------------------------------ expressions

@dataclass
class Expr(Node):
    pass


@dataclass
class Literal(Expr):
    value: Any  # str | int | float | bool | None


@dataclass
class Text(Expr):
    """A double-quoted string or prompt body: literal parts, `${expr}` and soft `$var.path`."""

    parts: list["str | Expr"]


@dataclass
class SoftVar(Expr):
    """`$name.path` written inside text: the value if set at run time, else the text itself."""

    name: str
    path: tuple[str, ...]
    raw: str


@dataclass
class Var(Expr):
    name: str
    dollar: bool = True  # `$x` or bare `x`


@dataclass
class GetAttr(Expr):
    target: Expr
    attr: str


@dataclass
class Call(Expr):
    func: str  # dotted name, validated by the transformer
    args: list[Expr]


@dataclass
class BinOp(Expr):
    op: str  # + - * / % == != < > <= >= ~ contains and or
    left: Expr
    right: Expr


@dataclass
class Not(Expr):
    operand: Expr


@dataclass
class Neg(Expr):
    operand: Expr


@dataclass
class ListLit(Expr):
    items: list[Expr]


@dataclass
class ObjectLit(Expr):
    entries: list[tuple[str, Expr]]


@dataclass
class InitialPrompt(Expr):
    pass


@dataclass
class ImplicitField(Expr):
    """`.field.sub` inside `filter ... where`: a field of the current element."""

    path: tuple[str, ...]


@dataclass
class Filter(Expr):
    source: Expr
    condition: Expr


@dataclass
class PreserveItem(Expr):
    """Policy list items `last N messages`, `tool results`."""

    kind: str  # "last" | "tool_results"
    count: int = 0


# ------------------------------------------------------------------ statements

@dataclass
class Stmt(Node):
    pass


@dataclass
class EscalationHandler(Node):
    action: str  # "return" | "continue" | "abort"
    value: Expr | None = None


@dataclass
class RunAgent(Expr):
    agent: str
    args: list[Expr]
    history: Expr | None = None
    handler: EscalationHandler | None = None
    with_form: bool = False


@dataclass
class RunFlow(Expr):
    flow: str
    args: list[Expr]
    handler: EscalationHandler | None = None


@dataclass
class CallLlm(Expr):
    prompt: str
    args: list[Expr]
    model: str | None = None


@dataclass
class EscalateHuman(Expr):
    message: Expr | None


@dataclass
class Assign(Stmt):
    target: Expr  # Var or GetAttr chain ending in a Var
    value: Expr


@dataclass
class ExprStmt(Stmt):
    expr: Expr  # RunAgent | RunFlow | CallLlm | EscalateHuman | Call


@dataclass
class Return(Stmt):
    value: Expr | None


@dataclass
class Log(Stmt):
    message: Expr
    notify: bool = False


@dataclass
class Push(Stmt):
    value: Expr
    target: Expr
    role: str | None = None


@dataclass
class Continue(Stmt):
    pass


@dataclass
class Abort(Stmt):
    message: Expr | None = None


@dataclass
class Fail(Stmt):
    message: Expr | None = None


@dataclass
class RetryStep(Stmt):
    value: Expr


@dataclass
class RetryWith(Stmt):
    value: Expr
    condition: Expr


@dataclass
class Mask(Stmt):
    guardrail: str


@dataclass
class Block(Stmt):
    condition: Expr


@dataclass
class Warn(Stmt):
    value: Expr
    is_condition: bool


@dataclass
class If(Stmt):
    branches: list[tuple[Expr, list[Stmt]]]
    orelse: list[Stmt] | None = None


@dataclass
class For(Stmt):
    var: str
    iterable: Expr
    body: list[Stmt]


@dataclass
class Loop(Stmt):
    max: Expr | None
    body: list[Stmt]


@dataclass
class Parallel(Stmt):
    body: list[Stmt]


@dataclass
class MatchCase(Node):
    pattern: Expr | None  # None: else
    normalized: bool
    body: Stmt


@dataclass
class Match(Stmt):
    subject: Expr
    cases: list[MatchCase]


@dataclass
class OnFailure(Stmt):
    body: list[Stmt]


# ------------------------------------------------------------------ definitions

@dataclass
class Definition(Node):
    pass


@dataclass
class Import(Definition):
    path: str | None  # None: `import streetrace` (the standard library, built in)
    name: str | None = None  # `import NAME from ./x.sr`
    std: str | None = None


@dataclass
class Model(Definition):
    name: str
    provider: str | None = None
    model_id: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)
    prop_lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    block: bool = False


@dataclass
class SchemaField(Node):
    name: str
    type: "TypeRef"


@dataclass
class TypeRef(Node):
    name: str  # string int float bool list, or a schema name
    item: "TypeRef | None" = None
    optional: bool = False


@dataclass
class Schema(Definition):
    name: str
    fields: list[SchemaField]


@dataclass
class Tool(Definition):
    name: str
    kind: str  # "builtin" | "mcp" | "ref"
    target: str | None
    auth: tuple[str, str] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)
    prop_lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    block: bool = False


@dataclass
class RetryPolicy(Definition):
    name: str
    times: int
    backoff: str | None = None


@dataclass
class TimeoutPolicy(Definition):
    name: str
    amount: float
    unit: str


@dataclass
class Policy(Definition):
    name: str
    properties: list[tuple[str, Expr, int, int]]


@dataclass
class EscalationCond(Node):
    op: str  # "~" "==" "!=" "contains" "expr"
    value: str | None = None
    expr: Expr | None = None
    source: str = ""


@dataclass
class Prompt(Definition):
    name: str
    body: Text | None
    model: str | None = None
    expecting: str | None = None
    expecting_list: bool = False
    inherit: str | None = None
    escalation: EscalationCond | None = None
    modifiers: list[tuple[str, Any, int, int]] = field(default_factory=list)


@dataclass
class AgentProp(Node):
    key: str
    values: list[Any]  # str names / dotted names, Literal strings, (number, unit) tuples


@dataclass
class Handler(Definition):
    timing: str
    event: str
    body: list[Stmt]


@dataclass
class Agent(Definition):
    name: str  # "" for the unnamed agent
    props: list[AgentProp]
    handlers: list[Handler]


@dataclass
class Flow(Definition):
    name: str
    params: list[str]
    body: list[Stmt]


@dataclass
class Module(Node):
    file: str
    definitions: list[Definition]
    version: str | None = None
