"""Semantic analysis: every error of a program in one run, with "did you mean" help.

Runs on the gathered ProgramInfo (a file plus its imports). Variable checks follow the run-time
rule that variables are flat per run: a variable is fine where every path before it assigned it,
or where a flow that runs this one, or an `on start` handler, may have (language.md, meaning 6).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Collection, Iterable, Iterator

from engine.lang import ast
from engine.lang.diagnostics import Diagnostic, did_you_mean, error, warning
from engine.lang.semantics import BUILTIN_VARS, ProgramInfo, flow_variables, walk_statements
from engine.runtime.flowlib import PURE_FUNCTIONS, guardrail_names

AGENT_KEYS = ("tools", "instruction", "prompt", "produces", "retry", "timeout", "description", "delegate", "use", "history")
MODEL_KEYS = ("provider", "name", "temperature", "max_tokens", "max_input_tokens")
TOOL_KEYS = ("type", "url", "name", "headers", "auth")
TOOL_TYPES = ("mcp", "builtin", "ref")
PRIMITIVE_TYPES = ("string", "int", "float", "bool", "list")
# Per-call variables of an agent turn: they exist in handlers and `escalate if`, not when an
# agent's system instruction is built.
RUN_TIME_VARS = ("output", "tool_call", "tool_result")
# Names compared for "did you mean" in one program, all errors together (far above any real one).
SUGGEST_BUDGET = 300_000


@dataclass(frozen=True)
class Ctx:
    """Where a statement is: what it may do there."""

    file: str
    in_loop: bool = False
    in_handler: bool = False
    in_failure: bool = False
    in_parallel: bool = False
    check_vars: bool = True

    def but(self, **changes: bool) -> "Ctx":
        """A copy with some flags changed (dataclasses.replace is slow for the many blocks)."""
        return Ctx(**{**self.__dict__, **changes})


def _cycle_text(path: list[str], start: int) -> str:
    """`a -> b -> a` for the cycle path[start:] back to path[start]; a long one shortened."""
    cycle = path[start:start + 6] if len(path) - start <= 6 else path[start:start + 3] + ["..."] + path[-2:]
    more = f" ({len(path) - start} agents)" if len(path) - start > 6 else ""
    return " -> ".join(cycle + [path[start]]) + more


class Analyzer:
    def __init__(self, info: ProgramInfo) -> None:
        self.info = info
        self.diags: list[Diagnostic] = []
        self.instruction_users: dict[str, list[ast.Agent]] = {}  # prompt -> agents using it
        self.suggest_budget = SUGGEST_BUDGET
        self.prompt_vars = info.assigned | set(BUILTIN_VARS) | set(info.prompts)  # what `${name}` may name
        # Per flow: the variables that may be set when it starts, and once it has run (None: too
        # large a program to track them; W0003 says so).
        tracked = flow_variables(info)
        self.track_vars = tracked is not None
        self.set_before, self.set_after = tracked or ({}, {})
        for a in info.agents.values():
            name = info.agent_fields(a).get("instruction")
            if name:
                self.instruction_users.setdefault(name, []).append(a)

    def suggest(self, name: str, *pools: Collection[str]) -> str | None:
        """`did_you_mean` over the pools, while the program's budget of names compared lasts: a
        hostile file with a hundred thousand names and as many typos would take hours."""
        size = sum(len(p) for p in pools)
        if size > self.suggest_budget:
            return None
        self.suggest_budget -= size
        return did_you_mean(name, itertools.chain(*pools))

    def err(self, file: str, node: ast.Node, code: str, msg: str, help: str | None = None) -> None:
        self.diags.append(error(file, node.line, node.column, code, msg, help))

    def ref(self, file: str, node: ast.Node, kind: str, name: str, table: dict, extra: str = "") -> bool:
        if name in table:
            return True
        self.err(file, node, "E0001", f"undefined {kind} '{name}'{extra}", self.suggest(name, table))
        return False

    # ---------------------------------------------------------------- entry
    def run(self) -> list[Diagnostic]:
        info = self.info
        for m in info.models.values():
            self.model(m)
        for s in info.schemas.values():
            self.schema(s)
        for t in info.tools.values():
            self.tool(t)
        for p in info.prompts.values():
            self.prompt(p)
        for a in info.agents.values():
            self.agent(a)
        self.agent_cycles()
        for p in info.policies.values():
            for _, value, *_ in p.properties:
                self.policy_value(info.file(p), value)
        if not self.track_vars:
            self.diags.append(warning(info.main_file, 1, 1, "W0003", "too many flows and statements to check variables",
                                      "undefined or unset variables are reported when the run reaches them"))
        for f in info.flows.values():
            self.flow(f)
        for h in info.handlers:
            self.handler(info.file(h), h)
        return self.diags

    # ---------------------------------------------------------------- definitions
    def model(self, m: ast.Model) -> None:
        file = self.info.file(m)
        if not m.block:
            return
        for key, (line, col) in m.prop_lines.items():
            if key not in MODEL_KEYS:
                self.diags.append(error(file, line, col, "E0017", f"unknown model property '{key}'",
                                        self.suggest(key, MODEL_KEYS) or "model properties: " + ", ".join(MODEL_KEYS)))
        for key in ("provider", "name"):
            if key not in m.properties:
                self.err(file, m, "E0010", f"model '{m.name}' has no '{key}'", f"add `{key}: ...` to the block")
        for key in ("temperature", "max_tokens", "max_input_tokens"):
            v = m.properties.get(key)
            want_int = key != "temperature"
            if v is not None and (isinstance(v, str) or (want_int and not isinstance(v, int))):
                line, col = m.prop_lines[key]
                self.diags.append(error(file, line, col, "E0004", f"model property '{key}' needs {'an integer' if want_int else 'a number'}"))

    def schema(self, s: ast.Schema) -> None:
        file = self.info.file(s)
        seen: set[str] = set()
        for f in s.fields:
            if f.name in seen:
                self.err(file, f, "E0003", f"field '{f.name}' is defined twice in schema '{s.name}'")
            seen.add(f.name)
            self.type_ref(file, f.type)

    def type_ref(self, file: str, t: ast.TypeRef) -> None:
        if t.name == "list":
            if t.item is None:
                self.err(file, t, "E0004", "'list' needs an item type", "write list[string] or Finding[]")
            else:
                self.type_ref(file, t.item)
            return
        if t.name not in PRIMITIVE_TYPES and t.name not in self.info.schemas:
            self.err(file, t, "E0001", f"undefined type '{t.name}'",
                     self.suggest(t.name, PRIMITIVE_TYPES, self.info.schemas))

    def tool(self, t: ast.Tool) -> None:
        file = self.info.file(t)
        if not t.block:
            return
        for key, (line, col) in t.prop_lines.items():
            if key not in TOOL_KEYS:
                self.diags.append(error(file, line, col, "E0017", f"unknown tool property '{key}'", self.suggest(key, TOOL_KEYS)))
        if "type" not in t.properties:
            self.err(file, t, "E0010", f"tool '{t.name}' has no 'type'", "add `type: mcp` or `type: builtin`")
        elif t.kind not in TOOL_TYPES:
            line, col = t.prop_lines["type"]
            self.diags.append(error(file, line, col, "E0017", f"unknown tool type '{t.kind}'", "use mcp or builtin"))
        elif t.kind == "mcp" and "url" not in t.properties:
            self.err(file, t, "E0010", f"mcp tool '{t.name}' has no 'url'")

    def prompt(self, p: ast.Prompt) -> None:
        info = self.info
        file = info.file(p)
        if p.body is None:
            self.err(file, p, "E0013", f"prompt '{p.name}' has no body",
                     f'give it one later in the file: prompt {p.name}: """..."""')
        if p.model is not None:
            self.ref(file, p, "model", p.model, info.models)
        if p.expecting is not None:
            self.ref(file, p, "schema", p.expecting, info.schemas)
        instruction_of = self.instruction_users.get(p.name, [])
        known = self.prompt_vars
        if p.body is not None:
            for e in iter_exprs(p.body):
                if isinstance(e, ast.Var):
                    if e.name in RUN_TIME_VARS and instruction_of:
                        self.err(file, e, "E0016", f"instruction prompt '{p.name}' uses ${{{e.name}}}, which only exists during an agent's turn",
                                 f"it is the system instruction of agent '{instruction_of[0].name or '(unnamed)'}'")
                    elif e.name not in known and e.name not in RUN_TIME_VARS:
                        self.err(file, e, "E0015", f"unknown variable '${{{e.name}}}' in prompt '{p.name}'",
                                 self.suggest(e.name, known) or "no flow assigns it; `$name` without braces is left as written when unset")
            self.pure_only(file, p.body, "a prompt body")
            cycle = self.prompt_cycle(p.name, [])
            if cycle:
                self.err(file, p, "E0021", "prompts include each other: " + " -> ".join(cycle),
                         "a prompt may include another with $name, but not itself through a chain")
        if p.escalation is not None and p.escalation.expr is not None:
            self.pure_only(file, p.escalation.expr, "an 'escalate if' condition")
            self.expr_types(file, p.escalation.expr)

    def prompt_cycle(self, name: str, path: list[str]) -> list[str] | None:
        """A chain of prompts including each other back to `name`, if any."""
        if name in path:
            return path[path.index(name):] + [name] if path[0] == name else None
        p = self.info.prompts.get(name)
        if p is None or p.body is None:
            return None
        for e in iter_exprs(p.body):
            ref = e.name if isinstance(e, (ast.Var, ast.SoftVar)) and not getattr(e, "path", ()) else None
            if ref and ref in self.info.prompts and ref not in self.info.assigned:
                found = self.prompt_cycle(ref, path + [name])
                if found:
                    return found
        return None

    def agent(self, a: ast.Agent) -> None:
        info = self.info
        file = info.file(a)
        label = f"agent '{a.name}'" if a.name else "the unnamed agent"
        seen: set[str] = set()
        for p in a.props:
            if p.key not in AGENT_KEYS:
                self.err(file, p, "E0017", f"unknown agent property '{p.key}'",
                         self.suggest(p.key, AGENT_KEYS) or "agent properties: " + ", ".join(AGENT_KEYS))
                continue
            if p.key in seen and p.key not in ("tools", "delegate", "use"):
                self.err(file, p, "E0003", f"'{p.key}' is set twice in {label}")
            seen.add(p.key)
            names = [v for v in p.values if isinstance(v, str)]
            if p.key == "instruction":
                for n in names:
                    self.ref(file, p, "prompt", n, info.prompts)
            elif p.key == "prompt":  # the first user message: a prompt, or a variable's value
                for n in names:
                    if n not in info.assigned and n not in BUILTIN_VARS:
                        self.ref(file, p, "prompt", n, info.prompts, " (nor a variable any flow assigns)")
            elif p.key == "tools":
                for n in names:
                    if "." not in n:
                        self.ref(file, p, "tool", n, info.tools)
            elif p.key in ("delegate", "use"):
                for n in names:
                    if n == a.name:
                        self.err(file, p, "E0011", f"circular agent reference: {n} -> {n}")
                    else:
                        self.ref(file, p, "agent", n, info.agents)
            elif p.key == "retry":
                for n in names:
                    self.ref(file, p, "retry policy", n, info.retries)
            elif p.key == "timeout":
                for n in names:
                    self.ref(file, p, "timeout policy", n, info.timeouts)
                for v in p.values:
                    if isinstance(v, tuple) and v[1] is not None and v[1] not in ("second", "seconds", "minute", "minutes", "hour", "hours"):
                        self.err(file, p, "E0017", f"unknown time unit '{v[1]}'", "use seconds, minutes or hours")
            elif p.key == "history":
                for n in names:
                    self.ref(file, p, "policy", n, info.policies)
            elif p.key == "description":
                if not any(isinstance(v, ast.Literal) for v in p.values):
                    self.err(file, p, "E0004", "description needs a string", 'write description "..."')
        if "instruction" not in seen:
            self.err(file, a, "E0010", f"{label} has no 'instruction'", "add `instruction PROMPT_NAME`")
        fields = info.agent_fields(a)
        if fields.get("delegate") and fields.get("use"):
            self.diags.append(warning(file, a.line, a.column, "W0002", f"{label} has both 'delegate' and 'use'",
                                      "delegate hands the conversation over; use calls agents as tools: usually one is meant"))
        for h in a.handlers:
            self.handler(file, h)

    def agent_cycles(self) -> None:
        """E0011 once per agent a cycle comes back to. Iterative and linear: a hostile file may
        chain a hundred thousand agents, each referring back to all the others."""
        info = self.info
        graph = {name: [n for n in (info.agent_fields(a).get("delegate", []) + info.agent_fields(a).get("use", []))
                        if n in info.agents and n != name]
                 for name, a in info.agents.items()}
        done: set[str] = set()
        reported: set[str] = set()
        for root in graph:
            if root in done:
                continue
            path: list[str] = [root]
            on_path = {root: 0}  # agent -> its index in path
            todo = [iter(graph[root])]
            while todo:
                nxt = next(todo[-1], None)
                if nxt is None:
                    todo.pop()
                    node = path.pop()
                    del on_path[node]
                    done.add(node)
                    continue
                if nxt in on_path:
                    if nxt not in reported:
                        reported.add(nxt)
                        self.err(info.file(info.agents[nxt]), info.agents[nxt], "E0011",
                                 "circular agent reference: " + _cycle_text(path, on_path[nxt]),
                                 "delegate/use must form a tree: remove one of these references")
                elif nxt not in done:
                    on_path[nxt] = len(path)
                    path.append(nxt)
                    todo.append(iter(graph[nxt]))

    def policy_value(self, file: str, e: ast.Expr) -> None:
        for sub in iter_exprs(e):
            if isinstance(sub, ast.Call):
                self.err(file, sub, "E0019", "policies are configuration: no function calls here")

    # ---------------------------------------------------------------- flows and handlers
    def flow(self, f: ast.Flow) -> None:
        file = self.info.file(f)
        seen: set[str] = set()
        for p in f.params:
            if p in seen:
                self.err(file, f, "E0003", f"parameter '${p}' appears twice in flow '{f.name}'")
            seen.add(p)
        self.block(f.body, Ctx(file, check_vars=self.track_vars),
                   set(BUILTIN_VARS) | set(f.params) | self.set_before.get(f.name, set()))

    def handler(self, file: str, h: ast.Handler) -> None:
        self.block(h.body, Ctx(file, in_handler=True, check_vars=False), set())
        if h.event == "start":
            for s in walk_statements(h.body):
                if isinstance(s, ast.RetryStep):
                    self.err(file, s, "E0009", f"'retry step' has no step to retry in an '{h.timing} start' handler",
                             "use it in 'on failure' blocks or in input/output/tool-call/tool-result handlers")

    def block(self, stmts: list[ast.Stmt], ctx: Ctx, defined: set[str]) -> set[str]:
        """Checks statements; returns the variables definitely assigned after them."""
        defined = set(defined)
        for i, s in enumerate(stmts):
            if isinstance(s, ast.OnFailure):
                if i == 0 or isinstance(stmts[i - 1], ast.OnFailure):
                    self.err(ctx.file, s, "E0009", "'on failure' must follow the statement it handles")
                self.block(s.body, ctx.but(in_failure=True), defined | {"error"})
                continue
            defined = self.stmt(s, ctx, defined)
        return defined

    def stmt(self, s: ast.Stmt, ctx: Ctx, defined: set[str]) -> set[str]:
        """Checks one statement; returns the variables definitely assigned after it. `defined` is
        the calling block's own set: an assignment adds to it in place (a copy per statement
        made long flows quadratic)."""
        file = ctx.file
        if isinstance(s, ast.Assign):
            self.value(s.value, ctx, defined)
            root = s.target
            while isinstance(root, ast.GetAttr):
                root = root.target
            if not isinstance(root, ast.Var):
                return defined  # not assignable: reported as E0018 by the transformer
            if root is not s.target:
                self.use(root, ctx, defined)
            defined.add(root.name)
            defined |= self.produced(s.value)
            return defined
        if isinstance(s, ast.ExprStmt):
            self.value(s.expr, ctx, defined)
            defined |= self.produced(s.expr)
            return defined
        if isinstance(s, ast.Return):
            if ctx.in_handler:
                self.err(file, s, "E0009", "'return' is not allowed in a handler", "handlers react to events; use `block if`, `warn` or `retry step`")
            if s.value is not None:
                self.value(s.value, ctx, defined)
            return defined
        if isinstance(s, (ast.Log,)):
            self.expr(s.message, ctx, defined)
            return defined
        if isinstance(s, ast.Push):
            self.expr(s.value, ctx, defined)
            root = s.target
            while isinstance(root, ast.GetAttr):
                root = root.target
            if isinstance(root, ast.Var):
                defined.add(root.name)
            return defined
        if isinstance(s, ast.Continue):
            if not ctx.in_loop:
                self.err(file, s, "E0012", "'continue' outside a loop", "continue works inside `for ... do` and `loop ... do`")
            return defined
        if isinstance(s, (ast.Abort, ast.Fail)):
            if s.message is not None:
                self.expr(s.message, ctx, defined)
            return defined
        if isinstance(s, ast.RetryStep):
            if not (ctx.in_failure or ctx.in_handler):
                self.err(file, s, "E0009", "'retry step' is only allowed in 'on failure' blocks and handlers")
            self.expr(s.value, ctx, defined)
            return defined
        if isinstance(s, (ast.Mask, ast.Block, ast.Warn, ast.RetryWith)):
            word = {ast.Mask: "mask", ast.Block: "block if", ast.Warn: "warn", ast.RetryWith: "retry with"}[type(s)]
            if not ctx.in_handler:
                self.err(file, s, "E0009", f"'{word}' is a guardrail: only allowed in 'on input/output/tool-call/tool-result' handlers")
            for e in (getattr(s, "condition", None), getattr(s, "value", None)):
                if isinstance(e, ast.Var) and not e.dollar and e.name not in self.info.assigned:
                    names = guardrail_names()
                    if e.name not in names:
                        self.err(file, e, "E0001", f"unknown guardrail '{e.name}'",
                                 self.suggest(e.name, names) or "built-in guardrails: " + ", ".join(names))
                elif e is not None:
                    self.expr(e, ctx, defined)
            if isinstance(s, ast.Mask) and s.guardrail not in guardrail_names()[1:]:
                self.err(file, s, "E0001", f"unknown guardrail '{s.guardrail}' for mask",
                         self.suggest(s.guardrail, guardrail_names()[1:]) or "mask works with: " + ", ".join(guardrail_names()[1:]))
            return defined
        if isinstance(s, ast.If):
            outs = []
            for cond, body in s.branches:
                self.expr(cond, ctx, defined)
                out = self.block(body, ctx, defined)
                if not terminates(body):
                    outs.append(out)
            if s.orelse is not None:
                out = self.block(s.orelse, ctx, defined)
                if not terminates(s.orelse):
                    outs.append(out)
            else:
                outs.append(defined)
            return set.intersection(*outs) if outs else defined
        if isinstance(s, ast.For):
            self.expr(s.iterable, ctx, defined)
            if isinstance(s.iterable, ast.Literal) and not isinstance(s.iterable.value, str) and s.iterable.value is not None:
                self.err(file, s.iterable, "E0004", f"cannot iterate over a {_lit_type(s.iterable.value)}")
            self.block(s.body, ctx.but(in_loop=True), defined | {s.var})
            return defined
        if isinstance(s, ast.Loop):
            if s.max is not None:
                self.expr(s.max, ctx, defined)
                literal = isinstance(s.max, ast.Literal) and (not isinstance(s.max.value, int) or isinstance(s.max.value, bool))
                if literal or isinstance(s.max, (ast.Text, ast.ListLit, ast.ObjectLit)):
                    self.err(file, s.max, "E0004", "'loop max' needs a whole number")
                elif isinstance(s.max, ast.Neg) and isinstance(s.max.operand, ast.Literal):
                    self.err(file, s.max, "E0004", "'loop max' cannot be negative")
            out = self.block(s.body, ctx.but(in_loop=True), defined)
            runs_once = s.max is None or (isinstance(s.max, ast.Literal) and isinstance(s.max.value, int) and s.max.value >= 1)
            return out if runs_once and not has_continue(s.body) else defined
        if isinstance(s, ast.Parallel):
            out = set(defined)
            for st in s.body:
                out |= self.block([st], ctx.but(in_parallel=True), defined)
            return out
        if isinstance(s, ast.Match):
            self.expr(s.subject, ctx, defined)
            outs = []
            has_else = False
            for c in s.cases:
                if c.pattern is not None:
                    self.expr(c.pattern, ctx, defined)
                else:
                    has_else = True
                out = self.block([c.body], ctx, defined)
                if not terminates([c.body]):
                    outs.append(out)
            if not has_else:
                outs.append(defined)
            return set.intersection(*outs) if outs else defined
        return defined

    def produced(self, e: ast.Expr) -> set[str]:
        """Variables set once `e` has run: an agent's `produces`, what a flow run may set."""
        if isinstance(e, ast.RunAgent) and e.agent in self.info.agents:
            p = self.info.agent_fields(self.info.agents[e.agent]).get("produces")
            return {p} if p else set()
        if isinstance(e, ast.RunFlow):
            return self.set_after.get(e.flow, set())
        return set()

    def value(self, e: ast.Expr, ctx: Ctx, defined: set[str]) -> None:
        info = self.info
        file = ctx.file
        if isinstance(e, ast.RunAgent):
            self.ref(file, e, "agent", e.agent, info.agents,
                     " (to run a flow, write `run FLOW`)" if e.agent in info.flows else "")
            for a in e.args:
                self.expr(a, ctx, defined)
            if e.history is not None:
                self.expr(e.history, ctx, defined)
            self.esc_handler(e.handler, ctx, defined)
        elif isinstance(e, ast.RunFlow):
            self.ref(file, e, "flow", e.flow, info.flows,
                     "" if e.flow not in info.agents else " (to run an agent, write `run agent NAME`)")
            for a in e.args:
                self.expr(a, ctx, defined)
            self.esc_handler(e.handler, ctx, defined)
        elif isinstance(e, ast.CallLlm):
            self.ref(file, e, "prompt", e.prompt, info.prompts)
            if e.model is not None:
                self.ref(file, e, "model", e.model, info.models)
            for a in e.args:
                self.expr(a, ctx, defined)
        elif isinstance(e, ast.EscalateHuman):
            for part in (e.message, e.options):
                if part is not None:
                    self.expr(part, ctx, defined)
        else:
            self.expr(e, ctx, defined)

    def esc_handler(self, h: ast.EscalationHandler | None, ctx: Ctx, defined: set[str]) -> None:
        if h is None:
            return
        if h.action == "continue" and not ctx.in_loop:
            self.err(ctx.file, h, "E0012", "'on escalate continue' outside a loop",
                     "use it inside `for ... do` or `loop ... do`, or write `on escalate return ...` / `abort`")
        if h.action == "return":
            if ctx.in_handler:
                self.err(ctx.file, h, "E0009", "'on escalate return' is not allowed in a handler")
            if h.value is not None:
                self.expr(h.value, ctx, defined)

    # ---------------------------------------------------------------- expressions
    def use(self, v: ast.Var, ctx: Ctx, defined: set[str]) -> None:
        if not ctx.check_vars or v.name in defined:
            return
        label = f"${v.name}" if v.dollar else v.name
        if v.name in self.info.assigned or v.name in BUILTIN_VARS:
            self.err(ctx.file, v, "E0002", f"variable '{label}' is used before it is assigned",
                     "assign it on every path before this line, in a flow that runs this one, or in an `on start` handler")
        else:
            self.err(ctx.file, v, "E0001", f"undefined variable '{label}'",
                     self.suggest(v.name, defined, self.info.assigned))

    def expr(self, e: ast.Expr, ctx: Ctx, defined: set[str]) -> None:
        """One walk: variable uses, misplaced forms and literal type mismatches."""
        for sub in iter_exprs(e):
            kind = type(sub)
            if kind is ast.Var:
                self.use(sub, ctx, defined)  # type: ignore[arg-type]
            elif kind is ast.Filter:
                self.pure_only(ctx.file, sub.condition, "a 'filter ... where' condition")  # type: ignore[attr-defined]
            elif kind is ast.ImplicitField and not self._inside_filter(e, sub):
                self.err(ctx.file, sub, "E0009", "'.field' only means something inside 'filter ... where'")
            elif kind is ast.PreserveItem:
                self.err(ctx.file, sub, "E0009", "'last N messages' / 'tool results' belong in a policy's preserve list")
            elif kind is ast.BinOp or kind is ast.Neg:
                self.literal_types(ctx.file, sub)

    def _inside_filter(self, root: ast.Expr, target: ast.Expr) -> bool:
        for sub in iter_exprs(root):
            if isinstance(sub, ast.Filter) and any(x is target for x in iter_exprs(sub.condition)):
                return True
        return False

    def pure_only(self, file: str, e: ast.Expr, where: str) -> None:
        for sub in iter_exprs(e):
            if isinstance(sub, ast.Call) and sub.func not in PURE_FUNCTIONS:
                self.err(file, sub, "E0019", f"'{sub.func}()' cannot be called in {where}",
                         "only built-in functions work here: " + ", ".join(sorted(PURE_FUNCTIONS)))

    def expr_types(self, file: str, e: ast.Expr) -> None:
        for sub in iter_exprs(e):
            if isinstance(sub, (ast.BinOp, ast.Neg)):
                self.literal_types(file, sub)

    def literal_types(self, file: str, sub: ast.BinOp | ast.Neg) -> None:
        """E0004 for operators applied to literals of the wrong type."""
        if isinstance(sub, ast.Neg):
            if isinstance(sub.operand, ast.Text):
                self.err(file, sub, "E0004", "'-' needs a number, not a string")
            return
        if isinstance(sub.left, ast.Literal | ast.Text) and isinstance(sub.right, ast.Literal | ast.Text):
            lt, rt = _static_type(sub.left), _static_type(sub.right)
            if sub.op in ("-", "*", "/", "%") and ("string" in (lt, rt) or "bool" in (lt, rt) or "null" in (lt, rt)):
                self.err(file, sub, "E0004", f"'{sub.op}' needs numbers, not {lt} and {rt}")
            elif sub.op in ("<", ">", "<=", ">=") and lt != rt and {lt, rt} != {"number"}:
                self.err(file, sub, "E0004", f"cannot compare {lt} {sub.op} {rt}")


def _lit_type(v: object) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return "string"


def _static_type(e: ast.Expr) -> str:
    return "string" if isinstance(e, ast.Text) else _lit_type(e.value)  # type: ignore[attr-defined]


def iter_exprs(e: ast.Expr | None) -> Iterator[ast.Expr]:
    """The expression and every sub-expression (text parts, arguments, operands)."""
    if e is None:
        return
    stack = [e]
    pop = stack.pop
    push_children = stack.extend
    children = _CHILDREN
    while stack:
        x = pop()
        yield x
        kids = children.get(type(x))
        if kids is not None:
            push_children(kids(x))


# Node type -> its direct sub-expressions (leaves have no entry).
_CHILDREN: dict[type, Callable[[Any], Iterable[ast.Expr]]] = {
    ast.Text: lambda x: [p for p in x.parts if not isinstance(p, str)],
    ast.GetAttr: lambda x: (x.target,),
    ast.Call: lambda x: x.args,
    ast.BinOp: lambda x: (x.left, x.right),
    ast.Not: lambda x: (x.operand,),
    ast.Neg: lambda x: (x.operand,),
    ast.ListLit: lambda x: x.items,
    ast.ObjectLit: lambda x: [v for _, v in x.entries],
    ast.Filter: lambda x: (x.source, x.condition),
    ast.RunAgent: lambda x: x.args,
    ast.RunFlow: lambda x: x.args,
    ast.CallLlm: lambda x: x.args,
    ast.EscalateHuman: lambda x: tuple(e for e in (x.message, x.options) if e is not None),
}


def terminates(stmts: list[ast.Stmt]) -> bool:
    """True when the block never falls through (ends in return/abort/fail/continue)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Abort, ast.Fail, ast.Continue)):
        return True
    if isinstance(last, ast.If) and last.orelse is not None:
        return all(terminates(b) for _, b in last.branches) and terminates(last.orelse)
    return False


def has_continue(stmts: list[ast.Stmt]) -> bool:
    from engine.lang.semantics import walk_statements

    for s in walk_statements(stmts):
        if isinstance(s, ast.Continue):
            return True
        e = s.value if isinstance(s, ast.Assign) else s.expr if isinstance(s, ast.ExprStmt) else None
        if isinstance(e, (ast.RunAgent, ast.RunFlow)) and e.handler is not None and e.handler.action == "continue":
            return True
    return False


def analyze(info: ProgramInfo) -> list[Diagnostic]:
    return Analyzer(info).run()
