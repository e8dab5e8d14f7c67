"""A fast driver for the grammar's LALR(1) table: lexing, indentation and tree building in one
tight loop, without importing Lark.

Lark analyses grammar.lark (LALR(1), contextual lexing); `build_tables` exports that analysis
as plain data, shipped as parse_table.json next to the grammar (a test keeps it in step; a
stale file is rebuilt in memory). This module walks the table faster than Lark's general loop
(one master regex instead of per-state scanners, no wrapper chains per reduction) and builds the
same trees Lark builds: tests compare the two on every example, the origin corpus and fuzzed
programs. On any error it gives up and the caller asks Lark itself to explain the error.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from engine.lang.parser import GRAMMAR_PATH, TAB_WIDTH, IndentationError_
from engine.lang.tree import Token, Tree

TABLE_PATH = Path(__file__).with_name("parse_table.json")


class FastFail(Exception):
    """The input is not a valid program: re-parse with Lark for the diagnostic."""

_MASTER = re.compile(
    r"""
    [\t \f]*  # inline whitespace before a token is skipped by the same match
    (?:
    (?P<WS>\\[\t ]*\r?\n)
  | (?P<NL>(?:\r?\n[\t \f]*|\#[^\n]*)+)
  | (?P<TRIPLE>\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?''')
  | (?P<STRING>"(?:[^"\\$]|\\.|\$(?!\{)|\$\{[^}]*\})*"|'(?:[^'\\\n]|\\.)*')
  | (?P<NUMBER>[0-9]+\.[0-9]+)
  | (?P<INT>[0-9]+)
  | (?P<VAR>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<WORD>[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)
  | (?P<BODY>\x00[0-9]+\x00)
  | (?P<OP>->|>=|<=|==|!=|\[\]|[()\[\]{}:,.=+\-*/%<>~?])
  | (?P<EOF>\Z)
    )
    """,
    re.VERBOSE,
)
_GROUP_TYPE = {"TRIPLE": "TRIPLE_STRING", "STRING": "STRING", "NUMBER": "NUMBER", "INT": "INT", "VAR": "VAR",
               "BODY": "PLAIN_BODY"}
# Terminals that need their own pattern, tried first in the states that accept them.
_SPECIAL = ("VERSION", "IMPORT_PATH", "MODEL_REF", "MODEL_VALUE", "PRESERVE_LAST", "PRESERVE_TOOL")
# A literal start that a special terminal needs: skips hopeless regex attempts.
_PREFIX = {"PRESERVE_LAST": "last", "PRESERVE_TOOL": "tool", "VERSION": "v", "IMPORT_PATH": "."}
_OPEN = {"LPAR", "LSQB", "LBRACE"}
_CLOSE = {"RPAR", "RSQB", "RBRACE"}


def _plan(rule: Any) -> list[Any]:
    """How Lark builds this rule's node: name, kept children (and which to splice), whether a
    single child replaces the node, size, goto symbol, and whether it is a pure unit rule."""
    keep_all = rule.options.keep_all_tokens
    keep = [
        [i, (not sym.is_term) and sym.name.startswith("_")]
        for i, sym in enumerate(rule.expansion)
        if keep_all or not (sym.is_term and sym.filter_out)
    ]
    expand1 = bool(rule.options.expand1 and not rule.alias)
    size = len(rule.expansion)
    unit = expand1 and size == 1 and keep == [[0, False]]
    return [rule.alias or rule.origin.name, keep, expand1, size, rule.origin.name, unit]


def grammar_sha() -> str:
    return hashlib.sha256(GRAMMAR_PATH.read_bytes()).hexdigest()


def build_tables(lark: Any) -> dict[str, Any]:
    """Lark's analysed LALR table (and lexer facts) as JSON-ready data."""
    from lark.parsers.lalr_analysis import Shift

    table = lark.parser.parser._parse_table
    plans: list[list[Any]] = []
    plan_index: dict[int, int] = {}
    states: dict[str, dict[str, list[Any]]] = {}
    for state, acts in table.states.items():
        row: dict[str, list[Any]] = {}
        for sym, (action, arg) in acts.items():
            if action is Shift:
                row[sym] = [1, arg]
            else:
                if id(arg) not in plan_index:
                    plan_index[id(arg)] = len(plans)
                    plans.append(_plan(arg))
                row[sym] = [0, plan_index[id(arg)]]
        states[str(state)] = row
    strings = {t.pattern.value: t.name for t in lark.terminals if t.pattern.type == "str"}
    specials = {t.name: t.pattern.to_regexp() for t in lark.terminals if t.name in _SPECIAL}
    starts = {name: [table.start_states[name], table.end_states[name]] for name in table.start_states}
    return {"grammar_sha256": grammar_sha(), "starts": starts, "states": states, "plans": plans,
            "strings": strings, "specials": specials}


def load_tables() -> dict[str, Any]:
    """The shipped table when it matches grammar.lark; else a fresh one from Lark."""
    try:
        data = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
        if data.get("grammar_sha256") == grammar_sha():
            return data
    except (OSError, ValueError):
        pass
    from engine.lang.lark_backend import lark_parser

    return build_tables(lark_parser())


_TABLES: dict[str, Any] | None = None


def load_parser(start: str) -> "FastParser":
    global _TABLES
    if _TABLES is None:
        _TABLES = load_tables()
    return FastParser(_TABLES, start)


class FastParser:
    def __init__(self, tables: dict[str, Any], start: str = "start") -> None:
        start_state, self.end_state = tables["starts"][start]
        self.start_state = start_state
        self.strings: dict[str, str] = tables["strings"]
        # (name, kept children, expand1, size, goto symbol, unit rule, keeps all children as they are)
        plans = [(name, tuple(tuple(k) for k in keep), expand1, size, origin, unit,
                  [k for k, _ in keep] == list(range(size)) and not any(sp for _, sp in keep))
                 for name, keep, expand1, size, origin, unit in tables["plans"]]
        # state -> symbol -> (True, next state) | (False, reduction plan)
        self.actions: dict[int, dict[str, tuple[bool, Any]]] = {
            int(state): {sym: (True, arg) if shift else (False, plans[arg]) for sym, (shift, arg) in row.items()}
            for state, row in tables["states"].items()
        }
        patterns = {name: re.compile(rx) for name, rx in tables["specials"].items()}
        self.specials: dict[int, tuple[tuple[str, str, re.Pattern[str]], ...]] = {}
        for state, acts in self.actions.items():
            found = tuple((name, _PREFIX.get(name, ""), patterns[name]) for name in _SPECIAL if name in acts)
            if found:
                self.specials[state] = found

    def parse(self, text: str) -> Tree:
        states = self.actions
        strings = self.strings
        specials = self.specials
        master = _MASTER.match
        new_token = Token
        stack: list[Any] = [self.start_state]
        values: list[Any] = []
        levels = [0]
        depth = 0
        pos = 0
        n = len(text)
        line = 1
        line_start = 0

        def reduce(plan: tuple) -> Any:
            """Pop the rule's children, build its tree (as Lark would), push the goto state."""
            name, keep, expand1, size, origin, unit, keep_all = plan
            if unit:  # `?a: b` with one child: the value stays, only the state changes
                new_state = states[stack[-2]][origin][1]
                stack[-1] = new_state
                return new_state
            if size:
                children = values[-size:]
                del values[-size:]
                del stack[-size:]
            else:
                children = []
            if keep_all:
                filtered = children
            else:
                filtered = []
                for i, splice in keep:
                    c = children[i]
                    if splice:
                        filtered += c.children
                    else:
                        filtered.append(c)
            if expand1 and len(filtered) == 1:
                value = filtered[0]
            else:
                value = Tree(name, filtered, 1, 1, True)  # `children` is a fresh slice: safe to keep
                for c in children:  # position of the first child, kept or filtered out
                    if not c.empty if type(c) is Tree else True:
                        value.line = c.line
                        value.column = c.column
                        value.empty = False
                        break
            new_state = states[stack[-1]][origin][1]
            stack.append(new_state)
            values.append(value)
            return new_state

        def feed(tok: Token) -> None:
            ttype = tok.type
            while True:
                try:
                    shift, arg = states[stack[-1]][ttype]
                except KeyError:
                    raise FastFail() from None
                if shift:
                    stack.append(arg)
                    values.append(tok)
                    return
                reduce(arg)

        while pos < n:
            state = stack[-1]
            special = specials.get(state)
            if special is not None:
                while pos < n and text[pos] in " \t\f":  # specials must see the token itself
                    pos += 1
                col = pos - line_start + 1
                hit = None
                for tname, prefix, rx in special:
                    if prefix and not text.startswith(prefix, pos):
                        continue
                    m = rx.match(text, pos)
                    if m is not None and m.end() > pos:
                        hit = (tname, m.group(0))
                        break
                if hit is not None:
                    feed(new_token(hit[0], hit[1], line, col))
                    pos += len(hit[1])
                    continue
            m = master(text, pos)
            if m is None:
                raise FastFail()
            kind = m.lastgroup
            if kind == "EOF":
                break
            value = m.group(kind)
            start = m.start(kind)
            col = start - line_start + 1
            end = m.end()
            if kind == "WS":  # a line continuation
                line += 1
                line_start = end
                pos = end
                continue
            if kind == "NL":
                nl_line = line
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = start + value.rfind("\n") + 1
                pos = end
                if depth > 0:
                    continue
                feed(new_token("_NL", value, nl_line, col))
                tail = value[value.rfind("\n") + 1:] if newlines else ""
                ws = tail[: len(tail) - len(tail.lstrip(" \t\f"))]
                indent = ws.count(" ") + ws.count("\t") * TAB_WIDTH
                if indent > levels[-1]:
                    levels.append(indent)
                    feed(new_token("_INDENT", "", line, indent + 1))
                else:
                    while indent < levels[-1]:
                        levels.pop()
                        feed(new_token("_DEDENT", "", line, indent + 1))
                    if indent != levels[-1]:
                        raise IndentationError_(line, indent + 1, "inconsistent indentation")
                continue
            if kind == "WORD":
                actions = states[state]
                kw = strings.get(value)
                ttype = kw if kw is not None and (kw in actions or "NAME" not in actions) else "NAME"
            elif kind == "OP":
                ttype = strings[value]
                if len(value) > 1 and ttype not in states[state]:
                    value = value[0]  # e.g. '[]' where only '[' fits, '->' outside `match`
                    ttype = strings[value]
                    end = start + 1
                if ttype in _OPEN:
                    depth += 1
                elif ttype in _CLOSE and depth > 0:
                    depth -= 1
            else:
                ttype = _GROUP_TYPE[kind]
            tok = new_token(ttype, value, line, col)
            newlines = value.count("\n") if kind == "STRING" or kind == "TRIPLE" else 0
            if newlines:
                line += newlines
                line_start = start + value.rfind("\n") + 1
            while True:  # feed, inlined for the common case
                entry = states[stack[-1]].get(ttype)
                if entry is None:
                    raise FastFail()
                if entry[0]:
                    stack.append(entry[1])
                    values.append(tok)
                    break
                reduce(entry[1])
            pos = end
        while len(levels) > 1:
            levels.pop()
            feed(new_token("_DEDENT", "", line, 1))
        # $END: reduce until the start rule is complete.
        while True:
            try:
                shift, arg = states[stack[-1]]["$END"]
            except KeyError:
                raise FastFail() from None
            if shift or reduce(arg) == self.end_state:
                break
        if stack[-1] != self.end_state:
            raise FastFail()
        return values[-1]


if __name__ == "__main__":  # python -m engine.lang.fastparse: refresh the shipped table
    from engine.lang.lark_backend import lark_parser as _lp

    TABLE_PATH.write_text(json.dumps(build_tables(_lp()), separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {TABLE_PATH}\n")
