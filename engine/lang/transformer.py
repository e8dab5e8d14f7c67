"""Lark parse tree -> AST (engine.lang.ast), collecting the diagnostics that need the tree's
shape (bad assignment targets, unknown events, bad interpolations) rather than the grammar."""

from __future__ import annotations

from typing import Any

from engine.lang.tree import Token, Tree

from engine.lang import ast
from engine.lang.diagnostics import Diagnostic, error
from engine.lang.parser import PlainBody
from engine.lang.text import build_text, unescape

EVENTS = ("start", "input", "output", "tool-call", "tool-result")
TIME_UNITS = {"second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600}
BACKOFFS = ("exponential", "linear", "fixed")
MAX_DIGITS = 300  # in one number literal: far past any real value, well inside what Python can print
# Expressions and blocks nested in one another, counted together. Python's own compiler refuses
# about 200 nested parentheses and 100 indentation levels in the generated code; past this the
# later stages (recursive, like Python's) would run out of stack: E0022 at the statement.
MAX_NESTING = 150


class _TooDeep(Exception):
    """Raised from deep inside a definition; `definition` reports it at the statement."""


def _pos(node: Any) -> tuple[int, int]:
    if type(node) is Tree:
        return (1, 1) if node.empty else (node.line, node.column)
    if isinstance(node, str):  # a Token
        return node.line or 1, node.column or 1
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    return 1, 1


class Builder:
    """Walks the parse tree once; one method per rule name."""

    def __init__(self, file: str, bodies: list[PlainBody], line_base: int = 0, col_base: int | None = None) -> None:
        self.file = file
        self.bodies = bodies
        self.diagnostics: list[Diagnostic] = []
        # For `${...}` sub-expressions: every node gets the interpolation's position.
        self._fixed: tuple[int, int] | None = None
        self._depth = 0  # expressions and statements open around the node being built
        self._stmt_depth = 0  # of which statements
        self.deepest = [0, 0, 0]  # statements, expressions in a statement, branches of one if/match
        self._stmt_at = (1, 1)  # the innermost statement being built (E0022 goes there)

    # ---------------------------------------------------------------- helpers
    def err(self, node: Any, code: str, message: str, help: str | None = None) -> None:
        line, col = self.pos(node)
        self.diagnostics.append(error(self.file, line, col, code, message, help))

    def pos(self, node: Any) -> tuple[int, int]:
        return self._fixed or _pos(node)

    def number(self, tok: Any, text: str | None = None) -> int | float:
        """A number token's value (`text`: its digits, when the token holds more). Python cannot
        turn an int of 4,300+ digits into text, and a float past 1.8e308 is `inf`, which no
        literal can write back: past MAX_DIGITS a number is an error, never a crash later."""
        while isinstance(tok, Tree):
            tok = tok.children[0]
        s = str(tok) if text is None else text
        if sum(c.isdigit() for c in s) > MAX_DIGITS:
            self.err(tok, "E0004", f"number too long: more than {MAX_DIGITS} digits")
            return 0
        return float(s) if "." in s else int(s)

    def module(self, tree: Tree) -> ast.Module:
        version = None
        defs: list[ast.Definition] = []
        for child in tree.children:
            if isinstance(child, Tree) and child.data == "version_decl":
                version = str(child.children[0])
                continue
            d = self.definition(child)
            if d is not None:
                defs.append(d)
        return ast.Module(1, 1, self.file, defs, version, tuple(self.deepest))

    def definition(self, t: Tree) -> ast.Definition | None:
        method = getattr(self, "d_" + t.data, None)
        if method is None:  # pragma: no cover - grammar and builder are kept in step
            raise AssertionError(f"no builder for {t.data}")
        self._depth = self._stmt_depth = 0
        self._stmt_at = _pos(t)
        try:
            return method(t)
        except _TooDeep:
            line, col = self._stmt_at
            self.diagnostics.append(error(self.file, line, col, "E0022",
                                          f"nests too deeply: more than {MAX_NESTING} expressions and blocks inside one another",
                                          "move the inner part into a flow of its own and `run` it, or into a variable"))
            return None

    def expr_at(self, tree: Any, line: int, column: int) -> ast.Expr:
        saved = self._fixed
        self._fixed = (line, column)
        try:
            return self.expr(tree)
        finally:
            self._fixed = saved

    def text(self, tok: Token, *, quoted: bool = True) -> ast.Text:
        raw = str(tok)
        line, col = self.pos(tok)
        if raw.startswith(("\"\"\"", "'''")):
            return build_text(raw[3:-3], line, col + 3, file=self.file, build_expr=self.expr_at,
                              diagnostics=self.diagnostics, escapes=False)
        if raw.startswith("'"):
            return ast.Text(line, col, [unescape(raw[1:-1])])
        return build_text(raw[1:-1], line, col + 1, file=self.file, build_expr=self.expr_at,
                          diagnostics=self.diagnostics, escapes=True)

    def plain(self, tok: Token) -> str:
        raw = str(tok)
        if raw.startswith(("\"\"\"", "'''")):
            return raw[3:-3]
        if raw.startswith(("'", '"')):
            return unescape(raw[1:-1])
        return raw

    # ---------------------------------------------------------------- definitions
    def d_import_all(self, t: Tree) -> ast.Import:
        return ast.Import(*_pos(t), path=str(t.children[0]))

    def d_import_one(self, t: Tree) -> ast.Import:
        return ast.Import(*_pos(t), path=str(t.children[1]), name=str(t.children[0]))

    def d_import_std(self, t: Tree) -> ast.Import:
        name = str(t.children[0])
        if name != "streetrace":
            self.err(t.children[0], "E0005", f"unknown library '{name}'",
                     "import a file with `import ./path.sr`; the only built-in library is `streetrace`")
        return ast.Import(*_pos(t), path=None, std=name)

    def d_import_std_one(self, t: Tree) -> ast.Import:
        name, source = (str(c) for c in t.children)
        if source != "streetrace":
            self.err(t.children[1], "E0005", f"unknown library '{source}'",
                     "import a file with `import NAME from ./path.sr`; the only built-in library is `streetrace`")
        else:
            self.err(t.children[0], "E0005", f"cannot import '{name}' from streetrace: its library has no definitions to import here",
                     f"declare a built-in tool with `tool {name} = builtin streetrace.{name}`")
        return ast.Import(*_pos(t), path=None, std=source)

    def d_import_uri(self, t: Tree) -> ast.Import:
        return self._import_uri(t, t.children[0], None)

    def d_import_uri_one(self, t: Tree) -> ast.Import:
        return self._import_uri(t, t.children[1], str(t.children[0]))

    def _import_uri(self, t: Tree, uri: Token, name: str | None) -> ast.Import:
        """`pip://pkg` and `mcp://name` (the origin's forms) parse; nothing loads them here."""
        what = str(uri)
        if what.startswith("pip://"):
            why, how = "Python packages are not loaded by .sr imports", "import .sr files with `import ./path.sr`"
        else:
            why, how = "MCP servers are not imported", 'declare one as a tool: `tool NAME = mcp "https://..."`'
        self.err(uri, "E0005", f"cannot import '{what}': {why}", how)
        return ast.Import(*_pos(t), path=None, name=name, std=what)

    def d_model_short(self, t: Tree) -> ast.Model:
        name, ref = t.children
        value = str(ref.children[0]) if ref.children else "acp"  # the keyword, as a model id
        provider, _, model_id = value.partition("/")
        if not model_id:
            provider, model_id = None, value
        return ast.Model(*_pos(t), name=str(name), provider=provider, model_id=model_id)

    def d_model_acp(self, t: Tree) -> ast.Model:
        name, command = t.children
        return ast.Model(*_pos(t), name=str(name), acp_command=unescape(str(command)[1:-1]), acp_at=_pos(command))

    def d_model_block(self, t: Tree) -> ast.Model:
        name = str(t.children[0])
        model = ast.Model(*_pos(t), name=name, block=True)
        for prop in t.children[1:]:
            key_tok, value_tok = prop.children
            key = str(key_tok)
            value: Any = str(value_tok)
            if value_tok.type == "STRING":
                value = unescape(value[1:-1])
            elif value_tok.type in ("INT", "NUMBER"):
                value = self.number(value_tok)
            if key in model.properties:
                self.err(key_tok, "E0003", f"property '{key}' is set twice in model '{name}'")
            model.properties[key] = value
            model.prop_lines[key] = _pos(key_tok)
        model.provider = _str_or_none(model.properties.get("provider"))
        model.model_id = _str_or_none(model.properties.get("name"))
        return model

    def d_schema_def(self, t: Tree) -> ast.Schema:
        fields = [ast.SchemaField(*_pos(f), name=str(f.children[0]), type=self.type_ref(f.children[1])) for f in t.children[1:]]
        return ast.Schema(*_pos(t), name=str(t.children[0]), fields=fields)

    def type_ref(self, t: Tree) -> ast.TypeRef:
        kids = t.children
        line, col = _pos(t)
        optional = any(isinstance(k, Token) and k.type == "OPTIONAL" for k in kids)
        name = str(kids[0])
        if t.data == "type_generic":
            return ast.TypeRef(line, col, name, self.type_ref(kids[1]), optional)
        if t.data == "type_array":
            return ast.TypeRef(line, col, "list", ast.TypeRef(line, col, name), optional)
        return ast.TypeRef(line, col, name, None, optional)

    def d_tool_mcp(self, t: Tree) -> ast.Tool:
        name, url = t.children[0], t.children[1]
        tool = ast.Tool(*_pos(t), name=str(name), kind="mcp", target=self.plain(url))
        if len(t.children) > 2:
            for opt in t.children[2].children:
                words = [str(c) for c in opt.children[:-1]]
                value = self.plain(opt.children[-1])
                if words[0] == "auth" and len(words) == 2 and words[1] in ("bearer", "basic"):
                    tool.auth = (words[1], value)
                elif len(words) == 1 and words[0] != "auth":
                    tool.headers[words[0]] = value
                else:
                    self.err(opt.children[0], "E0017", f"unknown tool option '{' '.join(words)}'",
                             "use `with auth bearer \"TOKEN\"`, `with auth basic \"...\"` or `with NAME \"value\"`")
        return tool

    def d_tool_builtin(self, t: Tree) -> ast.Tool:
        return ast.Tool(*_pos(t), name=str(t.children[0]), kind="builtin", target=_dotted(t.children[1]))

    def d_tool_ref(self, t: Tree) -> ast.Tool:
        return ast.Tool(*_pos(t), name=str(t.children[0]), kind="ref", target=_dotted(t.children[1]))

    def d_tool_block(self, t: Tree) -> ast.Tool:
        name = str(t.children[0])
        tool = ast.Tool(*_pos(t), name=name, kind="", target=None, block=True)
        for prop in t.children[1:]:
            key_tok = prop.children[0]
            key = str(key_tok)
            tool.prop_lines[key] = _pos(key_tok)
            if prop.data == "tool_headers":
                for h in prop.children[1:]:
                    tool.headers[str(h.children[0])] = self.plain(h.children[1])
                tool.properties[key] = "<headers>"
                continue
            v = prop.children[1]
            tool.properties[key] = self.plain(v) if isinstance(v, Token) else _dotted(v)
        tool.kind = tool.properties.get("type", "")
        tool.target = tool.properties.get("url") or tool.properties.get("name")
        return tool

    def d_retry_def(self, t: Tree) -> ast.RetryPolicy:
        kids = t.children
        pol = ast.RetryPolicy(*_pos(t), name=str(kids[0]), times=self.number(kids[1]))
        if len(kids) > 2:
            kind, word = str(kids[2]), str(kids[3])
            if kind not in BACKOFFS or word != "backoff":
                self.err(kids[2], "E0017", f"unknown backoff '{kind} {word}'",
                         "write `exponential backoff`, `linear backoff` or `fixed backoff`")
            pol.backoff = kind
        return pol

    def d_timeout_def(self, t: Tree) -> ast.TimeoutPolicy:
        name, amount, unit = t.children
        value = self.number(amount)
        if str(unit) not in TIME_UNITS:
            self.err(unit, "E0017", f"unknown time unit '{unit}'", "use seconds, minutes or hours")
        return ast.TimeoutPolicy(*_pos(t), name=str(name), amount=value, unit=str(unit))

    def d_policy_def(self, t: Tree) -> ast.Policy:
        props = []
        for p in t.children[1:]:
            words = [str(k) for k in p.children[:-1]]
            props.append((" ".join(words), self.expr(p.children[-1]), *_pos(p)))
        return ast.Policy(*_pos(t), name=str(t.children[0]), properties=props)

    def _prompt_head(self, t: Tree, prompt: ast.Prompt, mods: list[Tree]) -> None:
        for m in mods:
            line, col = _pos(m)
            if m.data == "mod_model":
                value: Any = self.plain(m.children[0])
                key = "model"
            elif m.data == "mod_expecting":
                value = (str(m.children[0]), len(m.children) > 1)
                key = "expecting"
            else:
                value = str(m.children[0])[1:]
                key = "inherit"
            prompt.modifiers.append((key, value, line, col))

    def d_prompt_decl(self, t: Tree) -> ast.Prompt:
        prompt = ast.Prompt(*_pos(t), name=str(t.children[0]), body=None)
        self._prompt_head(t, prompt, [c for c in t.children[1:] if isinstance(c, Tree)])
        return prompt

    def d_prompt_full(self, t: Tree) -> ast.Prompt:
        prompt = ast.Prompt(*_pos(t), name=str(t.children[0]), body=None)
        mods = [c for c in t.children[1:] if isinstance(c, Tree) and c.data.startswith("mod_")]
        self._prompt_head(t, prompt, mods)
        body_tree = next(c for c in t.children if isinstance(c, Tree) and c.data == "prompt_body")
        tok = body_tree.children[0]
        if tok.type == "PLAIN_BODY":
            index = int(str(tok).strip("\x00"))
            if 0 <= index < len(self.bodies):
                b = self.bodies[index]
                prompt.body = build_text(b.text, b.line, b.column, file=self.file, build_expr=self.expr_at,
                                         diagnostics=self.diagnostics, escapes=False)
            else:
                self.err(tok, "E0007", "unexpected character '\\x00'")
        else:
            prompt.body = self.text(tok)
        clause = next((c for c in t.children if isinstance(c, Tree) and c.data == "escalation_clause"), None)
        if clause is not None:
            prompt.escalation = self.escalation_cond(clause.children[0])
        return prompt

    def escalation_cond(self, c: Tree) -> ast.EscalationCond:
        line, col = _pos(c)
        ops = {"esc_normalized": "~", "esc_exact": "==", "esc_not_equal": "!=", "esc_contains": "contains"}
        if c.data in ops:
            value = self.plain(c.children[0])
            src = f'{ops[c.data]} {c.children[0]}'
            return ast.EscalationCond(line, col, ops[c.data], value=value, source=src)
        return ast.EscalationCond(line, col, "expr", expr=self.expr(c.children[0]), source="")

    def d_agent_def(self, t: Tree) -> ast.Agent:
        kids = t.children
        name = ""
        if kids and isinstance(kids[0], Token):
            name = str(kids[0])
            kids = kids[1:]
        props: list[ast.AgentProp] = []
        handlers: list[ast.Handler] = []
        for item in kids:
            if item.data == "handler":
                handlers.append(self.d_handler(item))
                continue
            key = item.children[0]
            values = [self.agent_value(v) for v in item.children[1:]]
            props.append(ast.AgentProp(*_pos(key), key=str(key), values=values,
                                       value_at=[_pos(v) for v in item.children[1:]]))
        return ast.Agent(*_pos(t), name=name, props=props, handlers=handlers)

    def agent_value(self, v: Any) -> Any:
        if isinstance(v, Token):  # STRING
            return ast.Literal(*_pos(v), self.plain(v))
        if v.data == "dotted":
            return _dotted(v)
        if v.data == "agent_number":
            num = self.number(v.children[0])
            unit = str(v.children[1]) if len(v.children) > 1 else None
            return (num, unit, *_pos(v))
        return (self.number(v.children[0]), None, *_pos(v))  # bare number

    def d_handler(self, t: Tree) -> ast.Handler:
        timing = str(t.children[0].children[0])
        event_tok = t.children[1]
        event = str(event_tok).replace("_", "-")
        if event not in EVENTS:
            self.err(event_tok, "E0017", f"unknown event '{event_tok}'",
                     "handlers react to: " + ", ".join(EVENTS))
        return ast.Handler(*_pos(t), timing=timing, event=event, body=self.block(t.children[2:]))

    def d_flow_def(self, t: Tree) -> ast.Flow:
        names = [str(c) for c in t.children if isinstance(c, Token) and c.type == "NAME"]
        first = next((c for c in t.children if isinstance(c, Token) and c.type == "VAR"), None)
        if first is not None:  # the origin's grammar has none (a syntax error there too)
            self.err(first, "E0007", f"a flow takes no parameters: '{first}'",
                     "flows read the run's variables: assign them before `run FLOW`")
        body = [c for c in t.children if isinstance(c, Tree)]
        return ast.Flow(*_pos(t), name="_".join(names), body=self.block(body))

    # ---------------------------------------------------------------- statements
    def block(self, items: list[Any]) -> list[ast.Stmt]:
        return [self.stmt(s) for s in items if isinstance(s, Tree)]

    def stmt(self, t: Tree) -> ast.Stmt:
        depth = self._depth = self._depth + 1
        if depth > MAX_NESTING:
            raise _TooDeep
        outer = self._stmt_at
        self._stmt_at = _pos(t)
        self._stmt_depth += 1
        if self._stmt_depth > self.deepest[0]:
            self.deepest[0] = self._stmt_depth
        built = self._stmt(t)
        self._stmt_depth -= 1
        self._stmt_at = outer
        self._depth = depth - 1
        return built

    def _stmt(self, t: Tree) -> ast.Stmt:
        line, col = _pos(t)
        d = t.data
        k = t.children
        if d == "assign_stmt":
            target = self.expr(k[0])
            if not _assignable(target):
                self.err(k[0], "E0018", "cannot assign to this expression",
                         "assign to a variable (`$x = ...`, `x = ...`) or a property (`$obj.a = ...`)")
            return ast.Assign(line, col, target, self.expr(k[1]))
        if d in ("run_agent", "run_flow", "call_llm", "escalate_human"):
            return ast.ExprStmt(line, col, self.expr(t))
        if d == "expr_stmt":
            e = self.expr(k[0])
            if not isinstance(e, ast.Call):
                self.err(k[0], "E0018", "this expression does nothing on its own",
                         "a statement must do something: assign it (`$x = ...`), `log` it or `return` it")
            return ast.ExprStmt(line, col, e)
        if d == "return_stmt":
            return ast.Return(line, col, self.expr(k[0]) if k else None)
        if d == "log_stmt":
            return ast.Log(line, col, self.expr(k[0]))
        if d == "notify_stmt":
            return ast.Log(line, col, self.expr(k[0]), notify=True)
        if d == "push_stmt":
            role = str(k[1]) if len(k) == 3 else None
            target = self.expr(k[-1])
            if not _assignable(target):
                self.err(k[-1], "E0018", "push needs a list variable after 'to'", "write `push e to $list`")
            return ast.Push(line, col, self.expr(k[0]), target, role)
        if d == "continue_stmt":
            return ast.Continue(line, col)
        if d == "abort_stmt":
            return ast.Abort(line, col, self.expr(k[0]) if k else None)
        if d == "fail_stmt":
            return ast.Fail(line, col, self.expr(k[0]) if k else None)
        if d == "retry_step":
            return ast.RetryStep(line, col, self.expr(k[0]))
        if d == "retry_with":
            return ast.RetryWith(line, col, self.expr(k[0]), self.expr(k[1]))
        if d == "mask_stmt":
            return ast.Mask(line, col, str(k[0]))
        if d == "block_stmt":
            return ast.Block(line, col, self.expr(k[0]))
        if d == "warn_if":
            return ast.Warn(line, col, self.expr(k[0]), True)
        if d == "warn_msg":
            return ast.Warn(line, col, self.expr(k[0]), False)
        if d == "inline_if":
            return ast.If(line, col, [(self.expr(k[0]), [self.stmt(k[1])])])
        if d == "if_block":
            if isinstance(k[0], Tree) and k[0].data == "inline_if":  # `if c: stmt` then elif/else lines
                branches = [(self.expr(k[0].children[0]), [self.stmt(k[0].children[1])])]
            else:
                branches = [(self.expr(k[0]), self.block([s for s in k[1:] if s.data not in ("elif_clause", "else_clause")]))]
            orelse = None
            for c in k[1:]:
                if c.data == "elif_clause":
                    branches.append((self.expr(c.children[0]), self.block(c.children[1:])))
                elif c.data == "else_clause":
                    orelse = self.block(c.children)
            if len(branches) > self.deepest[2]:
                self.deepest[2] = len(branches)
            return ast.If(line, col, branches, orelse)
        if d == "for_block":
            name = str(k[0])
            return ast.For(line, col, name[1:] if name.startswith("$") else name, self.expr(k[1]), self.block(k[2:]))
        if d == "loop_block":
            mx = None
            body = k
            if k and k[0].data == "loop_max":
                mx = self.expr(k[0].children[0])
                body = k[1:]
            return ast.Loop(line, col, mx, self.block(body))
        if d == "parallel_block":
            return ast.Parallel(line, col, self.block(k))
        if d == "match_block":
            cases = []
            for c in k[1:]:
                cl, cc = _pos(c)
                if c.data == "match_else":
                    cases.append(ast.MatchCase(cl, cc, None, False, self.stmt(c.children[0])))
                else:
                    pat = c.children[0]
                    cases.append(ast.MatchCase(cl, cc, self.expr(pat.children[0]), pat.data == "match_normalized",
                                               self.stmt(c.children[1])))
            if len(cases) > self.deepest[2]:
                self.deepest[2] = len(cases)
            return ast.Match(line, col, self.expr(k[0]), cases)
        if d == "failure_block":
            return ast.OnFailure(line, col, self.block(k))
        raise AssertionError(f"no statement builder for {d}")  # pragma: no cover

    # ---------------------------------------------------------------- expressions
    def expr(self, t: Any) -> ast.Expr:
        line, col = self._fixed or _pos(t)
        if isinstance(t, str):  # a Token
            return self.token_expr(t, line, col)
        build = _EXPR_BUILDERS.get(t.data)
        if build is None:  # pragma: no cover - grammar and builder are kept in step
            raise AssertionError(f"no expression builder for {t.data}")
        depth = self._depth = self._depth + 1
        if depth > MAX_NESTING:
            raise _TooDeep
        if depth - self._stmt_depth > self.deepest[1]:
            self.deepest[1] = depth - self._stmt_depth
        built = build(self, t, t.children, line, col)
        self._depth = depth - 1
        return built

    # One builder per expression rule: (tree, its children, line, column) -> AST.
    def x_var(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Var(line, col, k[0][1:])  # a slice of the token is a plain str

    def x_name(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Var(line, col, str(k[0]), dollar=False)

    def x_string(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return self.text(k[0])

    def x_number(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Literal(line, col, self.number(k[0]))

    def x_true(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Literal(line, col, True)

    def x_false(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Literal(line, col, False)

    def x_null(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Literal(line, col, None)

    def x_list(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.ListLit(line, col, [self.expr(c) for c in k if c is not None])

    def x_object(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        entries = []
        for e in k:
            if e is None:
                continue
            key = self.plain(e.children[0])
            entries.append((key, self.expr(e.children[1])))
        return ast.ObjectLit(line, col, entries)

    def x_initial_prompt(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.InitialPrompt(line, col)

    def x_implicit_field(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.ImplicitField(line, col, tuple(str(c) for c in k))

    def x_preserve_last(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.PreserveItem(line, col, "last", self.number(k[0], str(k[0]).split()[1]))

    def x_preserve_tool(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.PreserveItem(line, col, "tool_results")

    def x_getattr(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.GetAttr(line, col, self.expr(k[0]), str(k[1]))

    def x_call(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Call(line, col, str(k[0]), [self.expr(c) for c in k[1:] if c is not None])

    def x_method_call(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        target = self.expr(k[0])
        path = _name_path(target)
        if path is None:
            self.err(k[0], "E0018", "only library functions can be called",
                     "call a function by its name, e.g. `len(x)` or `lib.fn(x)`")
            path = "invalid"
        return ast.Call(line, col, f"{path}.{k[1]}", [self.expr(c) for c in k[2:] if c is not None])

    def x_binary(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:  # compare, arith
        return ast.BinOp(line, col, str(k[1].children[0]), self.expr(k[0]), self.expr(k[2]))

    def x_and_op(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.BinOp(line, col, "and", self.expr(k[0]), self.expr(k[1]))

    def x_or_op(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.BinOp(line, col, "or", self.expr(k[0]), self.expr(k[1]))

    def x_not_op(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Not(line, col, self.expr(k[0]))

    def x_neg(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Neg(line, col, self.expr(k[0]))

    def x_filter_op(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return ast.Filter(line, col, self.expr(k[0]), self.expr(k[1]))

    def x_run_agent(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return self.run(t, agent=True)

    def x_run_flow(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        return self.run(t, agent=False)

    def x_call_llm(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        args: list[ast.Expr] = []
        model = None
        for c in k[1:]:
            if c.data == "call_model":
                model = self.plain(c.children[0])
            else:
                args = [self.expr(a) for a in c.children]
        return ast.CallLlm(line, col, str(k[0]), args, model, self.pos(k[0]))

    def x_escalate_human(self, t: Tree, k: list[Any], line: int, col: int) -> ast.Expr:
        options = next((self.expr(c.children[0]) for c in k if isinstance(c, Tree) and c.data == "human_options"), None)
        message = next((self.expr(c) for c in k if not (isinstance(c, Tree) and c.data == "human_options")), None)
        return ast.EscalateHuman(line, col, message, options)

    def token_expr(self, t: Token, line: int, col: int) -> ast.Expr:
        if t.type == "VAR":
            return ast.Var(line, col, str(t)[1:])
        if t.type == "NAME":
            return ast.Var(line, col, str(t), dollar=False)
        if t.type in ("INT", "NUMBER"):
            return ast.Literal(line, col, self.number(t))
        if t.type == "STRING":
            return self.text(t)
        raise AssertionError(f"unexpected token {t.type}")  # pragma: no cover

    def run(self, t: Tree, agent: bool) -> ast.Expr:
        line, col = self.pos(t)
        target = str(t.children[0])
        args: list[ast.Expr] = []
        history = None
        handler = None
        with_form = False
        for c in t.children[1:]:
            if c.data in ("run_with", "run_list", "run_history_only"):
                with_form = c.data == "run_with"
                for a in c.children:
                    if isinstance(a, Tree) and a.data == "history":
                        history = self.expr(a.children[0])
                    else:
                        args.append(self.expr(a))
            elif c.data == "escalation_handler":
                act = c.children[0]
                al, ac = self.pos(act)
                if act.data == "esc_return":
                    handler = ast.EscalationHandler(al, ac, "return", self.expr(act.children[0]) if act.children else None)
                elif act.data == "esc_continue":
                    handler = ast.EscalationHandler(al, ac, "continue")
                else:
                    handler = ast.EscalationHandler(al, ac, "abort")
        name_at = self.pos(t.children[0])
        if agent:
            return ast.RunAgent(line, col, target, args, history, handler, with_form, name_at)
        if history is not None:
            self.err(t, "E0009", "`history` applies to agents, not flows")
        return ast.RunFlow(line, col, target, args, handler, name_at)


_EXPR_BUILDERS = {name[2:]: fn for name, fn in vars(Builder).items() if name.startswith("x_")}
_EXPR_BUILDERS.update(compare=Builder.x_binary, arith=Builder.x_binary)
del _EXPR_BUILDERS["binary"]


def _assignable(e: ast.Expr) -> bool:
    while isinstance(e, ast.GetAttr):
        e = e.target
    return isinstance(e, ast.Var)


def _name_path(e: ast.Expr) -> str | None:
    parts: list[str] = []
    while isinstance(e, ast.GetAttr):
        parts.append(e.attr)
        e = e.target
    if isinstance(e, ast.Var) and not e.dollar:
        parts.append(e.name)
        return ".".join(reversed(parts))
    return None


def _dotted(t: Tree) -> str:
    return ".".join(str(c) for c in t.children)




def _str_or_none(v: Any) -> str | None:
    return None if v is None else str(v)


def build_module(tree: Tree, file: str, bodies: list[PlainBody]) -> tuple[ast.Module, list[Diagnostic]]:
    b = Builder(file, bodies)
    module = b.module(tree)
    return module, b.diagnostics
