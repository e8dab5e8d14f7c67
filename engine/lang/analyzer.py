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
from engine.lang.semantics import BUILTIN_VARS, ProgramInfo, assigned_names, flow_variables, walk_statements
from engine.flow.flowlib import FUNCTIONS, builtin_function
from engine.flow.builtin_names import BUILTINS
from engine.flow.spec import acp_argv
from engine.flow.guardrails import known_guardrails, mask_guardrails

AGENT_KEYS = ("tools", "instruction", "prompt", "produces", "retry", "timeout", "description", "delegate", "use", "history")
MODEL_KEYS = ("provider", "name", "temperature", "max_tokens", "max_input_tokens", "base_url")
TOOL_KEYS = ("type", "url", "name", "headers", "auth")
TOOL_TYPES = ("mcp", "builtin", "ref")
PRIMITIVE_TYPES = ("string", "int", "float", "bool", "list")
# Per-call variables of an agent turn: they exist in handlers and `escalate if`, not when an
# agent's system instruction is built.
RUN_TIME_VARS = ("output", "tool_call", "tool_result")
# What a handler's frame holds besides the run's variables (docs/language.md, "Meaning").
HANDLER_VARS = ("input", "output", "args", "result", "tool", "error")
# The message in flight under its event-free name: bound for every handler, but, as in the
# origin, known to the checker only where it reads guardrail conditions (`block if`, `warn`,
# `retry with`) and `log`; elsewhere (an assignment, `push`) it is E0002 as the origin has it.
GUARDRAIL_ONLY_VARS = ("message",)
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
    # A handler's guardrail condition or `log`: the origin does not check the variables read
    # there, so one nothing assigns is a warning (W0006), not an error.
    lenient: bool = False

    def but(self, **changes: bool) -> "Ctx":
        """A copy with some flags changed (dataclasses.replace is slow for the many blocks)."""
        return Ctx(**{**self.__dict__, **changes})


class Defined:
    """The variables definitely assigned at a point of a body: one set, and an undo journal per
    open scope (a branch, a loop body). Copying the set at each statement or block made long
    flows quadratic (a 40,000-line flow took 27 s); with the journal each assignment costs O(1)
    per enclosing block."""

    __slots__ = ("names", "journal")

    def __init__(self, initial: Iterable[str]) -> None:
        self.names = set(initial)
        self.journal: list[list[str]] = [[]]

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def add(self, name: str) -> None:
        if name not in self.names:
            self.names.add(name)
            self.journal[-1].append(name)

    def update(self, names: Iterable[str]) -> None:
        for name in names:
            self.add(name)

    def open(self) -> None:
        self.journal.append([])

    def close(self) -> set[str]:
        """Ends the innermost scope: forgets what it assigned, and returns those names."""
        added = self.journal.pop()
        self.names.difference_update(added)
        return set(added)


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
        self._run_vars: set[str] | None = None
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

    def suggest(self, name: str, *pools: Collection[str], prefix: str = "") -> str | None:
        """`did_you_mean` over the pools, while the program's budget of names compared lasts: a
        hostile file with a hundred thousand names and as many typos would take hours. `prefix`
        is shown before the name suggested (`$` for a variable written with it)."""
        size = sum(len(p) for p in pools)
        if size > self.suggest_budget:
            return None
        self.suggest_budget -= size
        return did_you_mean(name, itertools.chain(*pools), prefix)

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
        if m.acp_command is not None:
            self.acp_command(file, m)
        if not m.block:
            return
        for key, (line, col) in m.prop_lines.items():
            if key not in MODEL_KEYS:
                self.diags.append(error(file, line, col, "E0017", f"unknown model property '{key}'",
                                        self.suggest(key, MODEL_KEYS) or "model properties: " + ", ".join(MODEL_KEYS)))
        if "provider" not in m.properties:
            self.err(file, m, "E0010", f"model '{m.name}' has no 'provider'", "add `provider: ...` to the block")
        if "name" not in m.properties:  # the origin accepts it (its default model is used)
            self.diags.append(warning(file, m.line, m.column, "W0005", f"model '{m.name}' has no 'name'",
                                      "add `name: MODEL-ID`: the model the provider runs"))
        base_url = m.properties.get("base_url")
        if base_url is not None and not (isinstance(base_url, str) and base_url.startswith(("http://", "https://"))):
            line, col = m.prop_lines["base_url"]
            self.diags.append(error(file, line, col, "E0004", "model property 'base_url' needs an http:// or https:// URL"))
        for key in ("temperature", "max_tokens", "max_input_tokens"):
            v = m.properties.get(key)
            want_int = key != "temperature"
            if v is not None and (isinstance(v, str) or (want_int and not isinstance(v, int))):
                line, col = m.prop_lines[key]
                self.diags.append(error(file, line, col, "E0004", f"model property '{key}' needs {'an integer' if want_int else 'a number'}"))

    def acp_command(self, file: str, m: ast.Model) -> None:
        """`model NAME = acp "CMD ARGS"`: a command the shell's quoting rules can split."""
        try:
            acp_argv(m.acp_command or "")
        except ValueError as exc:
            line, col = m.acp_at
            self.diags.append(error(file, line, col, "E0023", f"model '{m.name}': {exc}",
                                    'write the agent\'s command as you would type it, e.g. acp "gemini --experimental-acp"'))

    def acp_model_of(self, a: ast.Agent) -> ast.Model | None:
        """The ACP model the agent runs on, as the run picks its model (its instruction's or
        prompt's `using model`, else `main`; runtime/agents.py `chosen_model`), or None."""
        info = self.info
        chosen: str | None = None
        for key in ("instruction", "prompt"):
            for p in a.props:
                prompt = info.prompts.get(p.values[0]) if p.key == key and p.values and isinstance(p.values[0], str) else None
                if chosen is None and prompt is not None and prompt.model:
                    chosen = prompt.model
        model = info.models.get(chosen or "main")
        return model if model is not None and model.acp_command is not None else None

    def acp_agent(self, file: str, a: ast.Agent, label: str, model: ast.Model) -> None:
        """What an ACP agent cannot be given: escalate's tools and agents (it runs its own tools;
        escalate sees only its permission, file and terminal requests), and tool handlers of its
        own (its tool calls happen inside it)."""
        said = f"{label} runs on the ACP agent '{model.name}'"
        for p in a.props:
            if p.key == "tools":
                self.err(file, p, "E0024", f"{said}: it cannot be given 'tools'",
                         "an ACP agent brings its own tools; the rules decide its permission requests (docs/acp.md)")
            elif p.key in ("delegate", "use"):
                self.err(file, p, "E0024", f"{said}: it cannot '{p.key}' other agents",
                         f"give `{p.key}` to an agent on a model; an ACP agent can be the target of `{p.key}`")
        for h in a.handlers:
            if h.event in ("tool-call", "tool-result"):
                self.err(file, h, "E0024", f"{said}: a '{h.event}' handler of its own never runs",
                         "its tool calls happen inside the agent; the rules answer its permission requests")

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
        if t.kind == "builtin" and t.target and t.target not in BUILTINS:
            # Else the run fails only when the agent is built, perhaps after a person answered.
            known = "the built-ins are " + ", ".join(n for n in BUILTINS if "." in n) + " (commands: streetrace.cli)"
            close = self.suggest(t.target, BUILTINS)
            self.err(file, t, "E0017", f"unknown built-in tool '{t.target}'", f"{close} ({known})" if close else known)
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
                    if instruction_of and e.name not in info.prompts and e.name not in BUILTIN_VARS:
                        # As in the origin: an instruction is built with the agent, before the
                        # flows' variables exist; other prompts may be included, and (ours) the
                        # run's input, which exists before any agent.
                        self.err(file, e, "E0016", f"instruction prompt '{p.name}' uses ${{{e.name}}}, a run-time variable",
                                 f"it is the system instruction of agent '{instruction_of[0].name or '(unnamed)'}'; "
                                 "pass run-time values with `run agent A with ...` or in the agent's `prompt`")
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

    def ref_at(self, file: str, p: ast.AgentProp, index: int, kind: str, name: str, table: dict, extra: str = "") -> bool:
        """`ref` with the caret on the name itself (an agent property's `index`-th value)."""
        if name in table:
            return True
        line, col = p.value_at[index] if index < len(p.value_at) else (p.line, p.column)
        self.diags.append(error(file, line, col, "E0001", f"undefined {kind} '{name}'{extra}", self.suggest(name, table)))
        return False

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
            names = [(i, v) for i, v in enumerate(p.values) if isinstance(v, str)]
            if p.key == "instruction":
                for i, n in names:
                    self.ref_at(file, p, i, "prompt", n, info.prompts)
            elif p.key == "prompt":  # the first user message: a prompt, or a variable's value
                for i, n in names:
                    if n not in info.assigned and n not in BUILTIN_VARS:
                        self.ref_at(file, p, i, "prompt", n, info.prompts, " (nor a variable any flow assigns)")
            elif p.key == "tools":  # declared tools only, as in the origin: `streetrace.fs` too
                for i, n in names:
                    if n in BUILTINS and n not in info.tools:
                        line, col = p.value_at[i] if i < len(p.value_at) else (p.line, p.column)
                        self.diags.append(error(file, line, col, "E0001", f"undefined tool '{n}'",
                                                f"declare it: tool {n.rsplit('.', 1)[-1]} = builtin {n}"))
                    else:
                        self.ref_at(file, p, i, "tool", n, info.tools)
            elif p.key in ("delegate", "use"):
                for i, n in names:
                    if n == a.name and p.key == "delegate":  # a sub-agent of itself: no tree
                        line, col = p.value_at[i]
                        self.diags.append(error(file, line, col, "E0011", f"circular agent reference: {n} -> {n}",
                                                "an agent may `use` itself (recursion, bounded at run time), not delegate to itself"))
                    elif n != a.name:  # `use` of itself is recursion, as in the origin
                        self.ref_at(file, p, i, "agent", n, info.agents)
            elif p.key == "retry":
                for i, n in names:
                    self.ref_at(file, p, i, "retry policy", n, info.retries)
            elif p.key == "timeout":
                for i, n in names:
                    self.ref_at(file, p, i, "timeout policy", n, info.timeouts)
                for v in p.values:
                    if isinstance(v, tuple) and v[1] is not None and v[1] not in ("second", "seconds", "minute", "minutes", "hour", "hours"):
                        self.err(file, p, "E0017", f"unknown time unit '{v[1]}'", "use seconds, minutes or hours")
            elif p.key == "history":
                for i, n in names:
                    self.ref_at(file, p, i, "policy", n, info.policies)
            elif p.key == "description":
                if not any(isinstance(v, ast.Literal) for v in p.values):
                    self.err(file, p, "E0004", "description needs a string", 'write description "..."')
        if "instruction" not in seen:
            self.err(file, a, "E0010", f"{label} has no 'instruction'", "add `instruction PROMPT_NAME`")
        acp = self.acp_model_of(a)
        if acp is not None:
            self.acp_agent(file, a, label, acp)
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
        self.block(f.body, Ctx(file, check_vars=self.track_vars),
                   Defined(itertools.chain(BUILTIN_VARS, self.set_before.get(f.name, ()))))

    def handler(self, file: str, h: ast.Handler) -> None:
        """Checked like a flow body. A handler runs while a run is under way, and variables are
        flat per run: what `on start` handlers, flows and agents' `produces`
        set may be there; what only handlers set must be set before its use in this one."""
        if h.event == "start":
            initial: Iterable[str] = itertools.chain(BUILTIN_VARS, HANDLER_VARS)
        else:
            initial = itertools.chain(BUILTIN_VARS, HANDLER_VARS, self.run_vars())
        self.block(h.body, Ctx(file, in_handler=True, check_vars=self.track_vars), Defined(initial))
        if h.event == "start":
            for s in walk_statements(h.body):
                if isinstance(s, ast.RetryStep):
                    self.err(file, s, "E0009", f"'retry step' has no step to retry in an '{h.timing} start' handler",
                             "use it in 'on failure' blocks or in input/output/tool-call/tool-result handlers")

    def run_vars(self) -> set[str]:
        """Variables a flow, an agent's `produces` or an `on start` handler may set."""
        if self._run_vars is None:
            info = self.info
            names: set[str] = set()
            for f in info.flows.values():
                names |= assigned_names(walk_statements(f.body))
            for h in info.handlers:
                if h.event == "start":
                    names |= assigned_names(walk_statements(h.body))
            for a in info.agents.values():
                produced = info.agent_fields(a).get("produces")
                if produced:
                    names.add(produced)
            self._run_vars = names
        return self._run_vars

    def block(self, stmts: list[ast.Stmt], ctx: Ctx, defined: Defined) -> None:
        """Checks statements; what they assign is added to `defined`."""
        for i, s in enumerate(stmts):
            if isinstance(s, ast.OnFailure):
                if i == 0 or isinstance(stmts[i - 1], ast.OnFailure):
                    self.err(ctx.file, s, "E0009", "'on failure' must follow the statement it handles")
                self.scoped(s.body, ctx.but(in_failure=True), defined, ("error",))
                continue
            self.stmt(s, ctx, defined)

    def scoped(self, stmts: list[ast.Stmt], ctx: Ctx, defined: Defined, extra: Iterable[str] = ()) -> set[str]:
        """Checks a block that may not run (or not fall through): returns what it assigned and
        takes it back out of `defined`."""
        defined.open()
        defined.update(extra)
        self.block(stmts, ctx, defined)
        return defined.close()

    def stmt(self, s: ast.Stmt, ctx: Ctx, defined: Defined) -> None:
        """Checks one statement; what it definitely assigns is added to `defined`."""
        file = ctx.file
        if isinstance(s, ast.Assign):
            self.value(s.value, ctx, defined)
            root = s.target
            while isinstance(root, ast.GetAttr):
                root = root.target
            if not isinstance(root, ast.Var):
                return  # not assignable: reported as E0018 by the transformer
            if root is not s.target:
                self.use(root, ctx, defined)
            defined.add(root.name)
            defined.update(self.produced(s.value))
            return
        if isinstance(s, ast.ExprStmt):
            self.value(s.expr, ctx, defined)
            defined.update(self.produced(s.expr))
            return
        if isinstance(s, ast.Return):
            if ctx.in_handler:
                self.err(file, s, "E0009", "'return' is not allowed in a handler", "handlers react to events; use `block if`, `warn` or `retry step`")
            if s.value is not None:
                self.value(s.value, ctx, defined)
            return
        if isinstance(s, ast.Log):
            self.expr(s.message, ctx.but(lenient=ctx.in_handler), defined)
            return
        if isinstance(s, ast.Push):
            self.expr(s.value, ctx, defined)
            root = s.target
            while isinstance(root, ast.GetAttr):
                root = root.target
            if isinstance(root, ast.Var):
                defined.add(root.name)
            return
        if isinstance(s, ast.Continue):
            if not ctx.in_loop:
                self.err(file, s, "E0012", "'continue' outside a loop", "continue works inside `for ... do` and `loop ... do`")
            return
        if isinstance(s, (ast.Abort, ast.Fail)):
            if s.message is not None:
                self.expr(s.message, ctx, defined)
            return
        if isinstance(s, ast.RetryStep):
            if not (ctx.in_failure or ctx.in_handler):
                self.err(file, s, "E0009", "'retry step' is only allowed in 'on failure' blocks and handlers")
            self.expr(s.value, ctx, defined)
            return
        if isinstance(s, (ast.Mask, ast.Block, ast.Warn, ast.RetryWith)):
            self.guardrail_stmt(s, ctx, defined)
            return
        if isinstance(s, ast.If):
            outs = []
            for cond, body in s.branches:
                self.expr(cond, ctx, defined)
                added = self.scoped(body, ctx, defined)
                if not terminates(body):
                    outs.append(added)
            if s.orelse is not None:
                added = self.scoped(s.orelse, ctx, defined)
                if not terminates(s.orelse):
                    outs.append(added)
            else:
                outs.append(set())
            if outs:  # every branch that falls through assigned these
                defined.update(set.intersection(*outs))
            return
        if isinstance(s, ast.For):
            self.expr(s.iterable, ctx, defined)
            if isinstance(s.iterable, ast.Literal) and not isinstance(s.iterable.value, str) and s.iterable.value is not None:
                self.err(file, s.iterable, "E0004", f"cannot iterate over a {_lit_type(s.iterable.value)}")
            self.scoped(s.body, ctx.but(in_loop=True), defined, (s.var,))
            return
        if isinstance(s, ast.Loop):
            if s.max is not None:
                self.expr(s.max, ctx, defined)
                literal = isinstance(s.max, ast.Literal) and (not isinstance(s.max.value, int) or isinstance(s.max.value, bool))
                if literal or isinstance(s.max, (ast.Text, ast.ListLit, ast.ObjectLit)):
                    self.err(file, s.max, "E0004", "'loop max' needs a whole number")
                elif isinstance(s.max, ast.Neg) and isinstance(s.max.operand, ast.Literal):
                    self.err(file, s.max, "E0004", "'loop max' cannot be negative")
            added = self.scoped(s.body, ctx.but(in_loop=True), defined)
            runs_once = s.max is None or (isinstance(s.max, ast.Literal) and isinstance(s.max.value, int) and s.max.value >= 1)
            if runs_once and not has_continue(s.body):
                defined.update(added)
            return
        if isinstance(s, ast.Parallel):
            union: set[str] = set()
            for st in s.body:
                union |= self.scoped([st], ctx.but(in_parallel=True), defined)
            defined.update(union)
            return
        if isinstance(s, ast.Match):
            self.expr(s.subject, ctx, defined)
            outs = []
            has_else = False
            for c in s.cases:
                if c.pattern is not None:
                    self.expr(c.pattern, ctx, defined)
                else:
                    has_else = True
                added = self.scoped([c.body], ctx, defined)
                if not terminates([c.body]):
                    outs.append(added)
            if not has_else:
                outs.append(set())
            if outs:
                defined.update(set.intersection(*outs))

    def guardrail_stmt(self, s: ast.Mask | ast.Block | ast.Warn | ast.RetryWith, ctx: Ctx, defined: Defined) -> None:
        """`mask NAME`, `block if c`, `warn ...`, `retry with e if c`. A bare name that no code
        assigns is a guardrail; the names are an open set (the origin's `mcp_guard`,
        `cognitive_drift`, names a user registers): an unknown one is a warning, never an error."""
        word = {ast.Mask: "mask", ast.Block: "block if", ast.Warn: "warn", ast.RetryWith: "retry with"}[type(s)]
        file = ctx.file
        if not ctx.in_handler:
            self.err(file, s, "E0009", f"'{word}' is a guardrail: only allowed in 'on input/output/tool-call/tool-result' handlers")
        for e in (getattr(s, "condition", None), getattr(s, "value", None)):
            if isinstance(e, ast.Var) and not e.dollar and e.name not in self.info.assigned:  # as codegen reads it
                self.unknown_guardrail(file, e, e.name, known_guardrails())
            elif e is not None:
                self.expr(e, ctx.but(lenient=True), defined)
        if isinstance(s, ast.Mask):
            self.unknown_guardrail(file, s, s.guardrail, mask_guardrails())

    def unknown_guardrail(self, file: str, node: ast.Node, name: str, known: tuple[str, ...]) -> None:
        if name in known:
            return
        self.diags.append(warning(file, node.line, node.column, "W0004", f"unknown guardrail '{name}': it never triggers here",
                                  self.suggest(name, known) or "guardrails: " + ", ".join(known)
                                  + "; register others with engine.flow.guardrails.register_guardrail"))

    def produced(self, e: ast.Expr) -> set[str]:
        """Variables set once `e` has run: an agent's `produces`, what a flow run may set."""
        if isinstance(e, ast.RunAgent) and e.agent in self.info.agents:
            p = self.info.agent_fields(self.info.agents[e.agent]).get("produces")
            return {p} if p else set()
        if isinstance(e, ast.RunFlow):
            return self.set_after.get(e.flow, set())
        return set()

    def value(self, e: ast.Expr, ctx: Ctx, defined: Defined) -> None:
        info = self.info
        file = ctx.file
        if isinstance(e, ast.RunAgent):
            self.ref(file, _named(e), "agent", e.agent, info.agents,
                     " (to run a flow, write `run FLOW`)" if e.agent in info.flows else "")
            for a in e.args:
                self.expr(a, ctx, defined)
            if e.history is not None:
                self.expr(e.history, ctx, defined)
            self.esc_handler(e.handler, ctx, defined)
        elif isinstance(e, ast.RunFlow):
            self.ref(file, _named(e), "flow", e.flow, info.flows,
                     "" if e.flow not in info.agents else " (to run an agent, write `run agent NAME`)")
            for a in e.args:
                self.expr(a, ctx, defined)
            self.esc_handler(e.handler, ctx, defined)
        elif isinstance(e, ast.CallLlm):
            self.ref(file, _named(e), "prompt", e.prompt, info.prompts)
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

    def esc_handler(self, h: ast.EscalationHandler | None, ctx: Ctx, defined: Defined) -> None:
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
    def use(self, v: ast.Var, ctx: Ctx, defined: Defined) -> None:
        if not ctx.check_vars or v.name in defined:
            return
        label = f"${v.name}" if v.dollar else v.name
        if ctx.lenient and v.name not in self.info.assigned and v.name not in BUILTIN_VARS:
            if v.name not in GUARDRAIL_ONLY_VARS:
                self.diags.append(warning(ctx.file, v.line, v.column, "W0006", f"variable '{label}' is never assigned",
                                          f"nothing in this file sets it: when this line runs, the handler fails ('variable {label} is not set')"))
            return
        if v.name in self.info.assigned or v.name in BUILTIN_VARS:
            self.err(ctx.file, v, "E0002", f"variable '{label}' is used before it is assigned",
                     "assign it on every path before this line, in a flow that runs this one, or in an `on start` handler")
        else:  # E0002 too, as the origin reports it: nothing assigns it
            self.err(ctx.file, v, "E0002", f"variable '{label}' is never assigned",
                     self.suggest(v.name, defined.names, self.info.assigned, BUILTIN_VARS, prefix="$" if v.dollar else ""))

    def expr(self, e: ast.Expr, ctx: Ctx, defined: Defined) -> None:
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
            if isinstance(sub, ast.Call) and builtin_function(sub.func) is None:
                self.err(file, sub, "E0019", f"'{sub.func}()' cannot be called in {where}",
                         "only built-in functions work here: " + ", ".join(sorted(FUNCTIONS)))

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


def _named(e: ast.RunAgent | ast.RunFlow | ast.CallLlm) -> ast.Node:
    """Where the agent, flow or prompt name of a statement is written: the caret goes there."""
    if e.name_at is None:
        return e
    return ast.Literal(e.name_at[0], e.name_at[1], None)


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
