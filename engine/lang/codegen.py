"""AST -> a readable Python module with one `Workflow(WorkflowBase)` class.

Safety rules (docs/language.md, "Safety of generated code"): user text (file names included)
only ever appears as a `repr()` literal, never in a comment: Python reads a `coding:` declaration
from a comment, and under a codec like UTF-7 comment text can turn into code. The module's first
line fixes its encoding. Identifiers in the generated code are all ours (`flow_0`, `_r3`, ...),
user names only appear as string keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from engine.lang import ast
from engine.lang.semantics import ProgramInfo
from engine.flow.flowlib import builtin_function

_TIME_UNITS = {"second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600}


# The first line of every generated module: its encoding is ours, never read from user text.
ENCODING_LINE = "# -*- coding: utf-8 -*-"


def line_comment(line: int) -> str:
    """The comment before a statement's code: the `.sr` line it comes from, nothing the user wrote."""
    return f"# line {line}"


LINE_COMMENT = re.compile(r"\s*# line (\d+)")  # reads `line_comment` back


# Keyword arguments the spec classes default to (engine.flow.spec): left out of the
# generated calls, which are then shorter to read and to compile.
_SPEC_DEFAULTS = {"model": "None", "expecting": "None", "expecting_list": "False", "inherit": "None",
                  "escalation": "None", "provider": "None", "model_id": "None", "temperature": "None",
                  "max_tokens": "None", "max_input_tokens": "None", "base_url": "None", "acp_command": "None", "auth": "None", "headers": "{}"}


def _spec_call(cls: str, **args: str) -> str:
    """`Cls(key=value, ...)` from source texts, without the arguments equal to their default."""
    return cls + "(" + ", ".join(f"{k}={v}" for k, v in args.items() if _SPEC_DEFAULTS.get(k) != v) + ")"


def _indent(lines: list[str], n: int = 1) -> list[str]:
    pad = "    " * n
    if "" in lines:  # blank lines stay blank
        return [pad + ln if ln else ln for ln in lines]
    return (pad + ("\n" + pad).join(lines)).split("\n")  # no line holds a newline: user text is repr()'d


@dataclass
class _Loop:
    needs_catch: bool = False


@dataclass
class _Scope:
    """What statement code is nested in: loops and boundaries (parallel branch, retry wrapper)."""

    stack: list[Any] = field(default_factory=list)  # _Loop | "parallel" | "retry"
    flow_needs_catch: bool = False


class ExprGen:
    """Expressions -> Python expression source. `output_name`: `$output` in escalation checks;
    `item`: the current `filter` element variable; `in_lambda`: no `await` possible."""

    def __init__(self, gen: "CodeGen", *, output_name: str | None = None, in_lambda: bool = False,
                 prompt: str | None = None) -> None:
        self.gen = gen
        self.output_name = output_name
        self.in_lambda = in_lambda
        self.items: list[str] = []
        self.prompt_stack: list[str] = [prompt] if prompt else []

    def __call__(self, e: ast.Expr) -> str:
        return self.expr(e)

    def expr(self, e: ast.Expr) -> str:
        return _EXPR_CODE[type(e)](self, e)

    def e_Literal(self, e: ast.Literal) -> str:
        return repr(e.value)

    def e_Text(self, e: ast.Text) -> str:
        if all(isinstance(p, str) for p in e.parts):
            return repr("".join(e.parts))  # type: ignore[arg-type]
        parts = [repr(p) if isinstance(p, str) else self.expr(p) for p in e.parts]
        return f"rt.interpolate([{', '.join(parts)}])"

    def e_SoftVar(self, e: ast.SoftVar) -> str:
        if self.output_name and e.name == "output":
            return f"rt.path({self.output_name}, {e.path!r})" if e.path else self.output_name
        included = self.included_prompt(e.name, e.path)
        if included is not None:
            return included
        return f"rt.soft_var(ctx.vars, {e.name!r}, {e.path!r}, {e.raw!r})"

    def e_Var(self, e: ast.Var) -> str:
        if self.output_name and e.name == "output":
            return self.output_name
        included = self.included_prompt(e.name, ())
        if included is not None:
            return included
        return f"ctx.get({e.name!r}, {e.line})"

    def included_prompt(self, name: str, path: tuple[str, ...]) -> str | None:
        """In prompt text, `$other_prompt` / `${other_prompt}` includes that prompt's body
        (when no code assigns a variable of that name). Inlined at compile time."""
        if not self.prompt_stack or path or name in self.gen.info.assigned:
            return None
        target = self.gen.info.prompts.get(name)
        if target is None or target.body is None or name in self.prompt_stack:
            return None  # a cycle is reported by the analyzer (E0021)
        self.prompt_stack.append(name)
        try:
            return self.expr(target.body)
        finally:
            self.prompt_stack.pop()

    def e_GetAttr(self, e: ast.GetAttr) -> str:
        names: list[str] = []
        base: ast.Expr = e
        while isinstance(base, ast.GetAttr):
            names.append(base.attr)
            base = base.target
        return f"rt.path({self.expr(base)}, {tuple(reversed(names))!r})"

    def e_Call(self, e: ast.Call) -> str:
        args = ", ".join(self.expr(a) for a in e.args)
        if builtin_function(e.func) is not None:
            return f"rt.call_function({e.func!r}, [{args}], {e.line})"
        if self.in_lambda:  # no `await` possible here: the analyzer reports E0019 before codegen
            raise AssertionError(f"line {e.line}: call of {e.func}() in a lambda reached codegen")
        return f"(await ctx.call_function({e.func!r}, [{args}], line={e.line}))"

    def e_BinOp(self, e: ast.BinOp) -> str:
        a, b = self.expr(e.left), self.expr(e.right)
        if e.op in ("and", "or"):
            return f"({a} {e.op} {b})"
        if e.op == "~":
            return f"rt.normalized_equals({a}, {b})"
        if e.op == "contains":
            return f"rt.contains({a}, {b})"
        if e.op in ("+", "-", "*", "/", "%"):
            return f"rt.arith({e.op!r}, {a}, {b}, {e.line})"
        return f"rt.compare({e.op!r}, {a}, {b}, {e.line})"

    def e_Not(self, e: ast.Not) -> str:
        return f"(not {self.expr(e.operand)})"

    def e_Neg(self, e: ast.Neg) -> str:
        return f"rt.neg({self.expr(e.operand)}, {e.line})"

    def e_ListLit(self, e: ast.ListLit) -> str:
        return "[" + ", ".join(self.expr(i) for i in e.items) + "]"

    def e_ObjectLit(self, e: ast.ObjectLit) -> str:
        return "{" + ", ".join(f"{k!r}: {self.expr(v)}" for k, v in e.entries) + "}"

    def e_InitialPrompt(self, e: ast.InitialPrompt) -> str:
        return f"ctx.get('input_prompt', {e.line})"

    def e_ImplicitField(self, e: ast.ImplicitField) -> str:
        item = self.items[-1] if self.items else "None"
        return f"rt.path({item}, {e.path!r})"

    def e_Filter(self, e: ast.Filter) -> str:
        src = self.expr(e.source)
        name = self.gen.fresh("_it")
        self.items.append(name)
        saved = self.in_lambda
        self.in_lambda = True
        try:
            cond = self.expr(e.condition)
        finally:
            self.in_lambda = saved
            self.items.pop()
        return f"rt.filter_list({src}, lambda {name}: {cond}, {e.line})"

    def e_PreserveItem(self, e: ast.PreserveItem) -> str:
        return repr(static_value(e))

    def e_RunAgent(self, e: ast.RunAgent) -> str:
        return f"(await {self.gen.call_code(e, None)}).value"

    e_RunFlow = e_RunAgent
    e_CallLlm = e_RunAgent

    def e_EscalateHuman(self, e: ast.EscalateHuman) -> str:
        msg = self.expr(e.message) if e.message is not None else "''"
        options = f", options={self.expr(e.options)}" if e.options is not None else ""
        return f"(await ctx.escalate_to_human({msg}, line={e.line}{options}))"


# Expression node type -> its ExprGen method.
_EXPR_CODE = {getattr(ast, name[2:]): fn for name, fn in vars(ExprGen).items() if name.startswith("e_")}


def static_value(e: ast.Expr) -> Any:
    """A policy property as plain data (policies configure the runtime; they do not run)."""
    if isinstance(e, ast.Literal):
        return e.value
    if isinstance(e, ast.Text):
        return "".join(p if isinstance(p, str) else (p.raw if isinstance(p, ast.SoftVar) else "") for p in e.parts)
    if isinstance(e, ast.Var):
        return ("$" if e.dollar else "") + e.name
    if isinstance(e, ast.GetAttr):
        return f"{static_value(e.target)}.{e.attr}"
    if isinstance(e, ast.ListLit):
        return [static_value(i) for i in e.items]
    if isinstance(e, ast.ObjectLit):
        return {k: static_value(v) for k, v in e.entries}
    if isinstance(e, ast.PreserveItem):
        return {"last_messages": e.count} if e.kind == "last" else "tool_results"
    if isinstance(e, ast.BinOp):
        return {"op": e.op, "left": static_value(e.left), "right": static_value(e.right)}
    if isinstance(e, ast.Not):
        return {"op": "not", "operand": static_value(e.operand)}
    if isinstance(e, ast.Neg):
        v = static_value(e.operand)
        return -v if isinstance(v, (int, float)) else {"op": "-", "operand": v}
    return None


class CodeGen:
    def __init__(self, info: ProgramInfo, source_name: str, sha256: str) -> None:
        self.info = info
        self.source_name = source_name
        self.sha256 = sha256
        self._counter = 0
        self.scope = _Scope()
        self.handler_names: dict[int, str] = {}

    def fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    # ---------------------------------------------------------------- module
    def module(self) -> str:
        info = self.info
        out: list[str] = [
            ENCODING_LINE,
            "# Generated by escalate from the .sr file named in SOURCE below. Do not edit.",
            "from engine.flow.spec import (WorkflowBase, AgentSpec, PromptSpec, EscalationSpec, ModelSpec, SchemaSpec,",
            "                                 TypeSpec, ToolSpec, RetrySpec, TimeoutSpec, PolicySpec, HandlerSpec)",
            "from engine.flow.flow_api import AbortFlow, FlowError, RetryStep",
            "from engine.flow import flowlib as rt",
            "",
            "",
            "class Workflow(WorkflowBase):",
        ]
        body: list[str] = [f"SOURCE = {self.source_name!r}", f"SOURCE_SHA256 = {self.sha256!r}"]
        # Handlers first: the spec tables below refer to them.
        all_handlers = list(info.handlers) + [h for a in info.agents.values() for h in a.handlers]
        for h in all_handlers:
            name = f"handler_{len(self.handler_names)}"
            self.handler_names[id(h)] = name
            body += ["", "@staticmethod", f"async def {name}(ctx):"]
            body += _indent(self.callable_body(h.body, h.line, f"{h.timing} {h.event}"))
        body.append("")
        body += self.spec_tables()
        flows = list(info.flows.values())
        body.append(f"FLOWS = {{{', '.join(f'{f.name!r}: {self.flow_method(i)!r}' for i, f in enumerate(flows))}}}")
        for i, f in enumerate(flows):
            body += ["", f"async def {self.flow_method(i)}(self, ctx):"]
            body += _indent(self.callable_body(f.body, f.line, f"flow {f.name}", is_flow=True))
        out += _indent(body)
        return "\n".join(out) + "\n"

    @staticmethod
    def flow_method(i: int) -> str:
        return f"flow_{i}"

    def callable_body(self, stmts: list[ast.Stmt], line: int, what: str, is_flow: bool = False) -> list[str]:
        self.scope = _Scope()
        lines = self.block(stmts)
        if is_flow and not (stmts and isinstance(stmts[-1], ast.Return)):
            lines.append("return None")
        if self.scope.flow_needs_catch:
            lines = ["try:"] + _indent(lines) + ["except rt.FlowReturn as _ret:", "    return _ret.value"]
        return lines or ["pass"]

    # ---------------------------------------------------------------- specs
    def spec_tables(self) -> list[str]:
        info = self.info
        lines: list[str] = []

        def table(name: str, entries: list[tuple[str, str]]) -> None:
            if not entries:
                lines.append(f"{name} = {{}}")
                return
            lines.append(f"{name} = {{")
            lines.extend(f"    {k!r}: {v}," for k, v in entries)
            lines.append("}")

        table("MODELS", [(m.name, self.model_spec(m)) for m in info.models.values()])
        table("SCHEMAS", [(s.name, self.schema_spec(s)) for s in info.schemas.values()])
        table("TOOLS", [(t.name, self.tool_spec(t)) for t in info.tools.values()])
        table("RETRIES", [(r.name, f"RetrySpec(name={r.name!r}, times={r.times!r}, backoff={r.backoff!r})")
                          for r in info.retries.values()])
        table("TIMEOUTS", [(t.name, f"TimeoutSpec(name={t.name!r}, seconds={float(t.amount * _TIME_UNITS.get(t.unit, 1))!r})")
                           for t in info.timeouts.values()])
        table("POLICIES", [(p.name, f"PolicySpec(name={p.name!r}, properties={ {k: static_value(v) for k, v, *_ in p.properties}!r})")
                           for p in info.policies.values()])
        table("PROMPTS", [(p.name, self.prompt_spec(p)) for p in info.prompts.values()])
        table("AGENTS", [(a.name, self.agent_spec(a)) for a in info.agents.values()])
        hs = [self.handler_spec(h) for h in info.handlers]
        lines.append(f"HANDLERS = ({''.join(h + ', ' for h in hs)})")
        return lines

    def model_spec(self, m: ast.Model) -> str:
        p = m.properties
        return _spec_call("ModelSpec", name=repr(m.name), provider=repr(m.provider), model_id=repr(m.model_id),
                          temperature=repr(_num_or_none(p.get("temperature"))),
                          max_tokens=repr(_int_or_none(p.get("max_tokens"))),
                          max_input_tokens=repr(_int_or_none(p.get("max_input_tokens"))),
                          base_url=repr(p["base_url"] if isinstance(p.get("base_url"), str) else None),
                          acp_command=repr(m.acp_command))

    def type_spec(self, t: ast.TypeRef) -> str:
        if t.name == "list":
            item = self.type_spec(t.item) if t.item else "None"
            return f"TypeSpec(kind='list', item={item}, optional={t.optional!r})"
        if t.name in ("string", "int", "float", "bool"):
            return f"TypeSpec(kind={t.name!r}, optional={t.optional!r})"
        return f"TypeSpec(kind='schema', schema={t.name!r}, optional={t.optional!r})"

    def schema_spec(self, s: ast.Schema) -> str:
        fields = ", ".join(f"{f.name!r}: {self.type_spec(f.type)}" for f in s.fields)
        return f"SchemaSpec(name={s.name!r}, fields={{{fields}}})"

    def tool_spec(self, t: ast.Tool) -> str:
        return _spec_call("ToolSpec", name=repr(t.name), kind=repr(t.kind), target=repr(t.target or ""), auth=repr(t.auth),
                          headers=repr(dict(t.headers)))

    def prompt_spec(self, p: ast.Prompt) -> str:
        if p.body is None:
            body = "None"
        else:
            body = f"lambda ctx: {ExprGen(self, in_lambda=True, prompt=p.name)(p.body)}"
        esc = "None"
        if p.escalation is not None:
            c = p.escalation
            if c.op == "expr":
                check = ExprGen(self, output_name="output", in_lambda=True)(c.expr)  # type: ignore[arg-type]
                written = re.sub(r"^escalate\s+if\s+", "", self.info.line_text(p, c.line))
                esc = f"EscalationSpec(op='expr', check=lambda ctx, output: {check}, source={written!r})"
            else:
                esc = f"EscalationSpec(op={c.op!r}, value={c.value!r}, source={c.source!r})"
        return _spec_call("PromptSpec", name=repr(p.name), body=body, model=repr(p.model), expecting=repr(p.expecting),
                          expecting_list=repr(p.expecting_list), inherit=repr(p.inherit), escalation=esc, line=repr(p.line))

    def agent_spec(self, a: ast.Agent) -> str:
        f = self.info.agent_fields(a)
        handlers = "".join(self.handler_spec(h) + ", " for h in a.handlers)
        parts = [f"name={a.name!r}"]
        for key in ("instruction", "prompt", "description", "retry", "timeout", "produces", "history"):
            if f.get(key) is not None:
                parts.append(f"{key}={f[key]!r}")
        if f.get("timeout_seconds") is not None:
            parts.append(f"timeout_seconds={f['timeout_seconds']!r}")
        for key in ("tools", "delegate", "use"):
            if f.get(key):
                parts.append(f"{key}={tuple(f[key])!r}")
        if handlers:
            parts.append(f"handlers=({handlers})")
        parts.append(f"line={a.line}")
        return f"AgentSpec({', '.join(parts)})"

    def handler_spec(self, h: ast.Handler) -> str:
        return f"HandlerSpec(timing={h.timing!r}, event={h.event!r}, fn={self.handler_names[id(h)]}, line={h.line})"

    # ---------------------------------------------------------------- statements
    def block(self, stmts: list[ast.Stmt]) -> list[str]:
        lines: list[str] = []
        i = 0
        while i < len(stmts):
            s = stmts[i]
            nxt = stmts[i + 1] if i + 1 < len(stmts) else None
            if isinstance(nxt, ast.OnFailure) and not isinstance(s, ast.OnFailure):
                lines += self.with_failure(s, nxt)
                i += 2
                continue
            lines += self.stmt(s)
            i += 1
        return lines or ["pass"]

    def header(self, s: ast.Node) -> str:
        return line_comment(s.line)

    def stmt(self, s: ast.Stmt, override: str | None = None) -> list[str]:
        m = _STMT_CODE[type(s)]
        code = m(self, s, override) if override is not None and isinstance(s, (ast.Assign, ast.ExprStmt)) else m(self, s)
        return [self.header(s), *code]

    def ex(self) -> ExprGen:
        return ExprGen(self)

    def assign_code(self, target: ast.Expr, value: str, line: int) -> str:
        if isinstance(target, ast.Var):
            return f"ctx.vars[{target.name!r}] = {value}"
        names: list[str] = []
        base: ast.Expr = target
        while isinstance(base, ast.GetAttr):
            names.append(base.attr)
            base = base.target
        return f"rt.set_path({self.ex()(base)}, {tuple(reversed(names))!r}, {value}, {line})"

    def call_code(self, e: ast.Expr, override: str | None) -> str:
        ex = self.ex()
        args = "[" + ", ".join(ex(a) for a in e.args) + "]"  # type: ignore[attr-defined]
        if override is not None:
            args = f"([{override}] if {override} is not rt.UNSET else {args})"
        if isinstance(e, ast.RunAgent):
            hist = f", history={ex(e.history)}" if e.history is not None else ""
            return f"ctx.run_agent({e.agent!r}, {args}{hist}, line={e.line})"
        if isinstance(e, ast.RunFlow):
            return f"ctx.run_flow({e.flow!r}, {args}, line={e.line})"
        assert isinstance(e, ast.CallLlm)
        return f"ctx.call_llm({e.prompt!r}, {args}, model={e.model!r}, line={e.line})"

    def run_with_handler(self, e: ast.RunAgent | ast.RunFlow, target: ast.Expr | None, override: str | None,
                         returns: bool = False) -> list[str]:
        """The call, then the escalation action; then the assignment (or `return` of the value)."""
        h = e.handler
        assert h is not None
        lines: list[str] = []
        keep = None
        if h.action == "return":
            keep = self.fresh("_p")
            value = h.value if h.value is not None else target
            if value is None:
                lines.append(f"{keep} = None")
            elif h.value is None and isinstance(value, ast.Var):
                # A bare `on escalate return`: the target's previous value, null if it had none.
                lines.append(f"{keep} = rt.snapshot(ctx.vars.get({value.name!r}))")
            else:
                # Meaning 1: the value as it is BEFORE the run; a failure is deferred until used.
                if isinstance(value, ast.Var) and value.name != "output":
                    lines.append(f"{keep} = rt.snapshot_var(ctx.vars, {value.name!r}, {value.line})")
                else:
                    lines += [
                        "try:",
                        f"    {keep} = rt.snapshot({self.ex()(value)})",
                        "except FlowError as _err:",
                        f"    {keep} = rt.Deferred(_err)",
                    ]
        r = self.fresh("_r")
        lines.append(f"{r} = await {self.call_code(e, override)}")
        lines.append(f"if {r}.escalated:")
        if h.action == "return":
            lines.append(f"    {self.return_code(f'rt.resolve({keep})')}")
        elif h.action == "continue":
            lines.append(f"    {self.continue_code()}")
        else:
            who = f"agent {e.agent}" if isinstance(e, ast.RunAgent) else f"flow {e.flow}"
            lines.append(f"    raise AbortFlow({('escalation from ' + who)!r}, {h.line})")
        if target is not None:
            lines.append(self.assign_code(target, f"{r}.value", e.line))
        if returns:
            lines.append(self.return_code(f"{r}.value"))
        return lines

    def return_code(self, value: str) -> str:
        if "parallel" in self.scope.stack:
            self.scope.flow_needs_catch = True
            return f"raise rt.FlowReturn({value})"
        return f"return {value}"

    def continue_code(self) -> str:
        crossed = False
        for item in reversed(self.scope.stack):
            if isinstance(item, _Loop):
                if crossed:
                    item.needs_catch = True
                    return "raise rt.ContinueLoop()"
                return "continue"
            crossed = True
        return "raise rt.ContinueLoop()"  # unreachable after analysis (E0012)

    def s_Assign(self, s: ast.Assign, override: str | None = None) -> list[str]:
        v = s.value
        if isinstance(v, (ast.RunAgent, ast.RunFlow)) and v.handler is not None:
            return self.run_with_handler(v, s.target, override)
        if isinstance(v, (ast.RunAgent, ast.RunFlow, ast.CallLlm)):
            return [self.assign_code(s.target, f"(await {self.call_code(v, override)}).value", s.line)]
        return [self.assign_code(s.target, self.ex()(v), s.line)]

    def s_ExprStmt(self, s: ast.ExprStmt, override: str | None = None) -> list[str]:
        e = s.expr
        if isinstance(e, (ast.RunAgent, ast.RunFlow)) and e.handler is not None:
            return self.run_with_handler(e, None, override)
        if isinstance(e, (ast.RunAgent, ast.RunFlow, ast.CallLlm)):
            return [f"await {self.call_code(e, override)}"]
        return [self.ex()(e)]

    def s_Return(self, s: ast.Return) -> list[str]:
        v = s.value
        if isinstance(v, (ast.RunAgent, ast.RunFlow)) and v.handler is not None:
            return self.run_with_handler(v, None, None, returns=True)
        return [self.return_code(self.ex()(s.value) if s.value is not None else "None")]

    def s_Log(self, s: ast.Log) -> list[str]:
        fn = "notify" if s.notify else "log"
        return [f"await ctx.{fn}({self.ex()(s.message)}, line={s.line})"]

    def s_Push(self, s: ast.Push) -> list[str]:
        ex = self.ex()
        current = f"ctx.vars.get({s.target.name!r})" if isinstance(s.target, ast.Var) else ex(s.target)
        return [self.assign_code(s.target, f"rt.push({current}, {ex(s.value)}, {s.role!r}, {s.line})", s.line)]

    def s_Continue(self, s: ast.Continue) -> list[str]:
        return [self.continue_code()]

    def s_Abort(self, s: ast.Abort) -> list[str]:
        msg = f"rt.to_text({self.ex()(s.message)})" if s.message is not None else "'aborted'"
        return [f"raise AbortFlow({msg}, {s.line})"]

    def s_Fail(self, s: ast.Fail) -> list[str]:
        msg = f"rt.to_text({self.ex()(s.message)})" if s.message is not None else "'failed'"
        return [f"raise FlowError({msg}, {s.line})"]

    def s_RetryStep(self, s: ast.RetryStep) -> list[str]:
        return [f"raise RetryStep({self.ex()(s.value)}, {s.line})"]

    def s_RetryWith(self, s: ast.RetryWith) -> list[str]:
        ex = self.ex()
        return [f"ctx.retry_with({ex(s.value)}, {self.condition(s.condition)}, line={s.line})"]

    def s_Mask(self, s: ast.Mask) -> list[str]:
        return [f"ctx.mask({s.guardrail!r}, line={s.line})"]

    def condition(self, c: ast.Expr) -> str:
        """Guardrail conditions: a bare name that no code assigns is a built-in guardrail."""
        if isinstance(c, ast.Var) and not c.dollar and c.name not in self.info.assigned:
            # The handler's frame holds the message in flight as `message`.
            return f"ctx.guardrail({c.name!r}, line={c.line})"
        return self.ex()(c)

    def s_Block(self, s: ast.Block) -> list[str]:
        return [f"ctx.block({self.condition(s.condition)}, line={s.line})"]

    def s_Warn(self, s: ast.Warn) -> list[str]:
        value = self.condition(s.value) if s.is_condition else self.ex()(s.value)
        return [f"ctx.warn({value}, line={s.line})"]

    def s_If(self, s: ast.If) -> list[str]:
        lines: list[str] = []
        for i, (cond, body) in enumerate(s.branches):
            kw = "if" if i == 0 else "elif"
            if i:
                lines.append(line_comment(cond.line))
            lines.append(f"{kw} {self.ex()(cond)}:")
            lines += _indent(self.block(body))
        if s.orelse is not None:
            lines.append("else:")
            lines += _indent(self.block(s.orelse))
        return lines

    def loop_body(self, body: list[ast.Stmt], head: list[str], line: int) -> list[str]:
        loop = _Loop()
        self.scope.stack.append(loop)
        try:
            inner = self.block(body)
        finally:
            self.scope.stack.pop()
        if loop.needs_catch:
            inner = ["try:"] + _indent(inner) + ["except rt.ContinueLoop:", "    continue"]
        return head + _indent([f"await ctx.tick({line})"] + inner)

    def s_For(self, s: ast.For) -> list[str]:
        v = self.fresh("_v")
        head = [f"for {v} in rt.iterate({self.ex()(s.iterable)}, {s.line}):"]
        loop = _Loop()
        self.scope.stack.append(loop)
        try:
            inner = self.block(s.body)
        finally:
            self.scope.stack.pop()
        if loop.needs_catch:
            inner = ["try:"] + _indent(inner) + ["except rt.ContinueLoop:", "    continue"]
        return head + _indent([f"await ctx.tick({s.line})", f"ctx.vars[{s.var!r}] = {v}"] + inner)

    def s_Loop(self, s: ast.Loop) -> list[str]:
        if s.max is None:
            head = ["while True:"]
        else:
            head = [f"for _ in range(rt.loop_count({self.ex()(s.max)}, {s.line})):"]
        return self.loop_body(s.body, head, s.line)

    def s_Parallel(self, s: ast.Parallel) -> list[str]:
        lines: list[str] = []
        names: list[str] = []
        self.scope.stack.append("parallel")
        try:
            for st in s.body:
                name = self.fresh("_branch")
                names.append(name)
                lines.append(f"async def {name}():")
                lines += _indent(self.block([st]))
        finally:
            self.scope.stack.pop()
        lines.append(f"await ctx.parallel([{', '.join(names)}], line={s.line})")
        return lines

    def s_Match(self, s: ast.Match) -> list[str]:
        m = self.fresh("_m")
        lines = [f"{m} = {self.ex()(s.subject)}"]
        first = True
        else_case = None
        for c in s.cases:
            if c.pattern is None:
                else_case = c
                continue
            pat = self.ex()(c.pattern)
            test = f"rt.normalized_equals({m}, {pat})" if c.normalized else f"rt.compare('==', {m}, {pat}, {c.line})"
            lines.append(f"{'if' if first else 'elif'} {test}:")
            lines += _indent(self.stmt(c.body))
            first = False
        if else_case is not None:
            if first:
                lines += self.stmt(else_case.body)
            else:
                lines.append("else:")
                lines += _indent(self.stmt(else_case.body))
        return lines

    def s_OnFailure(self, s: ast.OnFailure) -> list[str]:
        # `block` pairs every `on failure` with the statement before it; a lone one is E0009.
        raise AssertionError(f"line {s.line}: 'on failure' without a statement reached codegen")

    def with_failure(self, step: ast.Stmt, handler: ast.OnFailure) -> list[str]:
        """`on failure:` wraps the statement before it; `retry step e` re-runs it with input e."""
        n, inp, err, rs = self.fresh("_n"), self.fresh("_in"), self.fresh("_e"), self.fresh("_rs")
        self.scope.stack.append("retry")
        try:
            step_code = self.stmt(step, override=inp)
            fail_code = self.block(handler.body)
        finally:
            self.scope.stack.pop()
        return [
            f"{n} = 0",
            f"{inp} = rt.UNSET",
            "while True:",
            "    try:",
            *_indent(step_code, 2),
            f"    except FlowError as {err}:",
            f"        {line_comment(handler.line)}: on failure",
            f"        ctx.vars['error'] = str({err})",
            "        try:",
            *_indent(fail_code, 3),
            f"        except RetryStep as {rs}:",
            f"            {n} += 1",
            f"            if {n} > rt.MAX_STEP_RETRIES:",
            f"                raise FlowError('step still failing after retries: ' + str({err}), {step.line}) from None",
            f"            {inp} = {rs}.value",
            "            continue",
            "    break",
        ]


# Statement node type -> its CodeGen method.
_STMT_CODE = {getattr(ast, name[2:]): fn for name, fn in vars(CodeGen).items() if name.startswith("s_")}


def _num_or_none(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _int_or_none(v: Any) -> int | None:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else None


def generate(info: ProgramInfo, source_name: str, sha256: str) -> str:
    return CodeGen(info, source_name, sha256).module()
