"""ProgramInfo: the definitions of a file and its imports gathered into symbol tables.

Gathering is where duplicates (E0003) and prompt declarations that disagree (E0014) are found;
prompts declared first and given a body later are merged here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from engine.lang import ast
from engine.lang.diagnostics import Diagnostic, error

# Variables every flow starts with: the run's input.
BUILTIN_VARS = ("input_prompt", "input")


@dataclass
class Unit:
    """One parsed file."""

    file: str
    module: ast.Module
    source: str
    only: set[str] | None = None  # `import NAME from`: just these definitions


@dataclass
class ProgramInfo:
    main_file: str
    sources: dict[str, str] = field(default_factory=dict)
    models: dict[str, ast.Model] = field(default_factory=dict)
    schemas: dict[str, ast.Schema] = field(default_factory=dict)
    tools: dict[str, ast.Tool] = field(default_factory=dict)
    retries: dict[str, ast.RetryPolicy] = field(default_factory=dict)
    timeouts: dict[str, ast.TimeoutPolicy] = field(default_factory=dict)
    policies: dict[str, ast.Policy] = field(default_factory=dict)
    prompts: dict[str, ast.Prompt] = field(default_factory=dict)
    agents: dict[str, ast.Agent] = field(default_factory=dict)
    flows: dict[str, ast.Flow] = field(default_factory=dict)
    handlers: list[ast.Handler] = field(default_factory=list)
    file_of: dict[int, str] = field(default_factory=dict)  # id(definition) -> file
    assigned: set[str] = field(default_factory=set)  # every variable some code assigns
    diagnostics: list[Diagnostic] = field(default_factory=list)
    _lines: dict[str, list[str]] = field(default_factory=dict)
    _agent_fields: dict[int, dict[str, Any]] = field(default_factory=dict)

    # ---------------------------------------------------------------- helpers
    def file(self, node: ast.Node) -> str:
        return self.file_of.get(id(node), self.main_file)

    def line_text(self, node: ast.Node, line: int) -> str:
        """Source line `line` of the file `node` comes from."""
        lines = self._lines.get(self.file(node), [])
        return lines[line - 1].strip() if 1 <= line <= len(lines) else ""

    def agent_fields(self, a: ast.Agent) -> dict[str, Any]:
        """Agent properties as plain values (validated by the analyzer). Computed once per agent:
        every `run agent` asks; callers only read the result."""
        cached = self._agent_fields.get(id(a))
        if cached is None:
            cached = self._agent_fields[id(a)] = self._fields_of(a)
        return cached

    def _fields_of(self, a: ast.Agent) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for p in a.props:
            names = [v for v in p.values if isinstance(v, str)]
            if p.key in ("tools", "delegate", "use"):
                out.setdefault(p.key, []).extend(names)
            elif p.key == "description":
                lit = next((v for v in p.values if isinstance(v, ast.Literal)), None)
                out["description"] = lit.value if lit is not None else (names[0] if names else None)
            elif p.key == "timeout":
                num = next((v for v in p.values if isinstance(v, tuple)), None)
                if num is not None:
                    amount, unit = num[0], num[1] or "seconds"
                    scale = {"second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600}.get(unit, 1)
                    out["timeout_seconds"] = float(amount * scale)
                elif names:
                    out["timeout"] = names[0]
            elif p.key in ("instruction", "prompt", "produces", "retry", "history"):
                if names:
                    out[p.key] = names[0]
        return out

    def definitions(self) -> Iterator[ast.Definition]:
        yield from self.models.values()
        yield from self.schemas.values()
        yield from self.tools.values()
        yield from self.retries.values()
        yield from self.timeouts.values()
        yield from self.policies.values()
        yield from self.prompts.values()
        yield from self.agents.values()
        yield from self.flows.values()


def _err(info: ProgramInfo, file: str, node: ast.Node, code: str, msg: str, help: str | None = None) -> None:
    info.diagnostics.append(error(file, node.line, node.column, code, msg, help))


def gather(units: list[Unit], main_file: str) -> ProgramInfo:
    """Build the symbol tables. Units come dependencies first, the main file last."""
    info = ProgramInfo(main_file)
    for u in units:
        info.sources[u.file] = u.source
        info._lines[u.file] = u.source.splitlines()
    for u in units:
        wanted = _closure(u.module, u.only) if u.only is not None else None
        for d in u.module.definitions:
            if isinstance(d, ast.Import):
                continue
            name = getattr(d, "name", None)
            if wanted is not None and name not in wanted:
                continue
            info.file_of[id(d)] = u.file
            _add(info, u.file, d)
    for p in info.prompts.values():
        _merge_modifiers(info, p)
    for a in info.agents.values():
        for h in a.handlers:
            info.file_of.setdefault(id(h), info.file(a))
            _mark_nodes(info, h.body, info.file(a))
    for f in info.flows.values():
        _mark_nodes(info, f.body, info.file(f))
    for h in info.handlers:
        _mark_nodes(info, h.body, info.file(h))
    for a in info.agents.values():
        produced = info.agent_fields(a).get("produces")
        if produced:
            info.assigned.add(produced)
    return info


def _closure(module: ast.Module, names: set[str]) -> set[str]:
    """`import NAME from ./f.sr`: NAME plus every definition of that file it refers to."""
    by_name: dict[str, list[ast.Definition]] = {}
    for d in module.definitions:
        name = getattr(d, "name", None)
        if isinstance(name, str):
            by_name.setdefault(name, []).append(d)
    wanted = set(names)
    todo = list(names)
    while todo:
        for d in by_name.get(todo.pop(), []):
            for ref in _references(d):
                if ref in by_name and ref not in wanted:
                    wanted.add(ref)
                    todo.append(ref)
    return wanted


def _references(d: ast.Definition) -> set[str]:
    """Names a definition mentions (over-approximated: any name that could be a definition)."""
    refs: set[str] = set()
    if isinstance(d, ast.Agent):
        for p in d.props:
            refs.update(v for v in p.values if isinstance(v, str))
        stmts = [s for h in d.handlers for s in walk_statements(h.body)]
    elif isinstance(d, ast.Prompt):
        refs.update(v for k, v, *_ in d.modifiers if k == "model")
        refs.update(v[0] for k, v, *_ in d.modifiers if k == "expecting")
        if d.body is not None:
            refs.update(p.name for p in d.body.parts if isinstance(p, (ast.Var, ast.SoftVar)))
        return refs
    elif isinstance(d, ast.Schema):
        for f in d.fields:
            t: ast.TypeRef | None = f.type
            while t is not None:
                refs.add(t.name)
                t = t.item
        return refs
    elif isinstance(d, ast.Flow):
        stmts = list(walk_statements(d.body))
    else:
        return refs
    for s in stmts:
        e = s.value if isinstance(s, (ast.Assign, ast.Return)) else s.expr if isinstance(s, ast.ExprStmt) else None
        if isinstance(e, ast.RunAgent):
            refs.add(e.agent)
        elif isinstance(e, ast.RunFlow):
            refs.add(e.flow)
        elif isinstance(e, ast.CallLlm):
            refs.add(e.prompt)
            if e.model:
                refs.add(e.model)
    return refs


def _mark_nodes(info: ProgramInfo, stmts: list[ast.Stmt], file: str) -> None:
    """Record the file of nested statements (for source-line comments) and assigned names."""
    nested = walk_statements(stmts)
    if file != info.main_file:  # the main file is every node's default
        info.file_of.update((id(s), file) for s in nested)
    info.assigned.update(assigned_names(nested))


def assigned_names(stmts: list[ast.Stmt]) -> set[str]:
    """The variables these statements (not those nested in them) may assign."""
    names: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.Assign):
            root = s.target
            while isinstance(root, ast.GetAttr):
                root = root.target
            if isinstance(root, ast.Var):
                names.add(root.name)
        elif isinstance(s, ast.For):
            names.add(s.var)
        elif isinstance(s, ast.Push) and isinstance(s.target, ast.Var):
            names.add(s.target.name)
    return names


# Tracking variables across flows costs about (flows + statements of flows that run flows) x
# (flows + calls + variables assigned):
# past this, a program (far larger than any written by hand) is not tracked, rather than a
# hostile file keeping `escalate check` busy for hours.
TRACKING_BUDGET = 20_000_000


def flow_variables(info: ProgramInfo) -> tuple[dict[str, set[str]], dict[str, set[str]]] | None:
    """Variables are flat per run. Per flow: (what it may find set when it starts: what `on start`
    handlers and every flow that runs it, directly or not, assign; what it and the flows it
    runs may leave set). Assigned counts every assignment, `for` variable and the
    `produces` of agents run. None past TRACKING_BUDGET."""
    start = set().union(*(assigned_names(walk_statements(h.body)) for h in info.handlers if h.event == "start"))
    callers: dict[str, set[str]] = {name: set() for name in info.flows}
    callees: dict[str, set[str]] = {}
    own: dict[str, set[str]] = {}
    statements = 0
    for name, flow in info.flows.items():
        refs = _references(flow)
        callees[name] = refs & callers.keys()
        for callee in callees[name]:
            callers[callee].add(name)
        produced = {info.agent_fields(info.agents[a]).get("produces") for a in refs & info.agents.keys()}
        body = walk_statements(flow.body)
        if callees[name]:  # each `run` of a flow adds what that flow may set
            statements += len(body)
        own[name] = assigned_names(body) | {p for p in produced if isinstance(p, str)}
    flows, calls = len(own), sum(len(c) for c in callees.values())
    if (flows + statements) * (flows + calls + sum(len(o) for o in own.values())) > TRACKING_BUDGET:
        return None
    before = {name: start | _reach(name, callers, own) for name in info.flows}
    after = {name: own[name] | _reach(name, callees, own) for name in info.flows}
    return before, after


def _reach(name: str, edges: dict[str, set[str]], own: dict[str, set[str]]) -> set[str]:
    """The union of `own` over every flow reachable from `name` along `edges`."""
    seen, todo, found = {name}, list(edges[name]), set()
    while todo:
        other = todo.pop()
        if other not in seen:
            seen.add(other)
            found |= own[other]
            todo += edges[other]
    return found


def walk_statements(stmts: list[ast.Stmt]) -> list[ast.Stmt]:
    """Every statement, each followed by the ones nested in it (pre-order)."""
    out: list[ast.Stmt] = []
    todo = stmts[::-1]
    while todo:
        s = todo.pop()
        out.append(s)
        kids = child_blocks(s)
        if kids:
            todo += kids[::-1]
    return out


def child_blocks(s: ast.Stmt) -> list[ast.Stmt]:
    if isinstance(s, ast.If):
        out = [x for _, body in s.branches for x in body]
        return out + (s.orelse or [])
    if isinstance(s, (ast.For, ast.Loop, ast.Parallel, ast.OnFailure)):
        return s.body
    if isinstance(s, ast.Match):
        return [c.body for c in s.cases]
    return []


_TABLES = {
    ast.Model: ("models", "model"),
    ast.Schema: ("schemas", "schema"),
    ast.Tool: ("tools", "tool"),
    ast.RetryPolicy: ("retries", "retry policy"),
    ast.TimeoutPolicy: ("timeouts", "timeout policy"),
    ast.Policy: ("policies", "policy"),
    ast.Agent: ("agents", "agent"),
    ast.Flow: ("flows", "flow"),
}


def _add(info: ProgramInfo, file: str, d: ast.Definition) -> None:
    if isinstance(d, ast.Handler):
        info.handlers.append(d)
        return
    if isinstance(d, ast.Prompt):
        _add_prompt(info, file, d)
        return
    attr, kind = _TABLES[type(d)]
    table: dict[str, Any] = getattr(info, attr)
    name = d.name  # type: ignore[attr-defined]
    if name in table:
        prev = table[name]
        label = f"{kind} '{name}'" if name else "the unnamed agent"
        _err(info, file, d, "E0003", f"{label} is defined twice",
             f"the first definition is at {info.file(prev)}:{prev.line}")
        return
    table[name] = d


def _add_prompt(info: ProgramInfo, file: str, p: ast.Prompt) -> None:
    prev = info.prompts.get(p.name)
    if prev is None:
        info.prompts[p.name] = p
        return
    if prev.body is not None and p.body is not None:
        _err(info, file, p, "E0003", f"prompt '{p.name}' has two bodies",
             f"the first body is at {info.file(prev)}:{prev.line}; a prompt may be declared first and given one body later")
        return
    # Declaration + definition: merge into the one that has the body.
    keep, other = (p, prev) if p.body is not None else (prev, p)
    keep.modifiers = other.modifiers + keep.modifiers
    if keep.escalation is None:
        keep.escalation = other.escalation
    elif other.escalation is not None:
        _err(info, file, p, "E0014", f"prompt '{p.name}' has two 'escalate if' conditions")
    info.prompts[p.name] = keep
    info.file_of[id(keep)] = info.file_of.get(id(keep), file)


def _merge_modifiers(info: ProgramInfo, p: ast.Prompt) -> None:
    seen: dict[str, Any] = {}
    for key, value, line, col in p.modifiers:
        if key in seen and seen[key] != value:
            info.diagnostics.append(error(info.file(p), line, col, "E0014",
                                          f"prompt '{p.name}' has conflicting '{_mod_label(key)}' modifiers",
                                          f"it was already given {_mod_text(key, seen[key])}"))
            continue
        seen[key] = value
    if "model" in seen:
        p.model = seen["model"]
    if "expecting" in seen:
        p.expecting, p.expecting_list = seen["expecting"]
    if "inherit" in seen:
        p.inherit = seen["inherit"]


def _mod_label(key: str) -> str:
    return {"model": "using model", "expecting": "expecting", "inherit": "inherit"}[key]


def _mod_text(key: str, value: Any) -> str:
    if key == "model":
        return f'using model "{value}"'
    if key == "expecting":
        return f"expecting {value[0]}{'[]' if value[1] else ''}"
    return f"inherit ${value}"
