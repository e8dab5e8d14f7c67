"""A fast driver for the grammar's LALR(1) table: lexing, indentation and tree building in one
tight loop, without importing Lark.

Lark analyses grammar.lark (LALR(1), contextual lexing); `build_tables` exports that analysis
as plain data, shipped as parse_table.json next to the grammar (a test keeps it in step; a
stale file is rebuilt in memory). This module walks the table faster than Lark's general loop
(one master regex instead of per-state scanners, no wrapper chains per reduction, the runs of
unit reductions of the precedence ladder folded into precomputed goto maps, bare positions for
the tokens no rule keeps) and builds the same trees Lark builds: tests compare the two on every example, the origin corpus and fuzzed
programs. On any error it gives up and the caller asks Lark itself to explain the error.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from engine.lang.grammar import GRAMMAR_PATH, TAB_WIDTH, IndentationError_
from engine.lang.tree import Token, Tree

TABLE_PATH = Path(__file__).with_name("parse_table.json")


class FastFail(Exception):
    """The input is not a valid program: re-parse with Lark for the diagnostic. `where`: the
    (line, column) of the token refused, when known (for the rare input Lark's lexer accepts)."""

    def __init__(self, where: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.where = where

# Alternatives start with distinct characters (but TRIPLE before STRING, NUMBER before INT; TRIPLE is
# parser._TRIPLE, the unrolled form of the grammar's lazy pattern): the
# most frequent come first, which the regex engine tries in order.
_MASTER = re.compile(
    r"""
    [\t \f]*  # inline whitespace before a token is skipped by the same match
    (?:
    (?P<WORD>[A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)
  | (?P<OP>->|>=|<=|==|!=|\[\]|[()\[\]{}:,.=+\-*/%<>~?])
  | (?P<NL>(?:\r?\n[\t \f]*|\#[^\n]*)+)
  | (?P<VAR>\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<TRIPLE>\"\"\"[^"]*(?:"(?!"")[^"]*)*\"\"\"|'''[^']*(?:'(?!'')[^']*)*''')
  | (?P<STRING>"(?:[^"\\$]|\\.|\$(?!\{)|\$\{[^}]*\})*"|'(?:[^'\\\n]|\\.)*')
  | (?P<NUMBER>[0-9]+\.[0-9]+)
  | (?P<INT>[0-9]+)
  | (?P<WS>\\[\t ]*\r?\n)
  | (?P<BODY>\x00[0-9]+\x00)
  | (?P<EOF>\Z)
    )
    """,
    re.VERBOSE,
)
_GROUP_TYPE = {"TRIPLE": "TRIPLE_STRING", "STRING": "STRING", "NUMBER": "NUMBER", "INT": "INT", "VAR": "VAR",
               "BODY": "PLAIN_BODY"}
# Terminals that need their own pattern, tried first in the states that accept them.
_SPECIAL = ("VERSION", "IMPORT_PATH", "IMPORT_URI", "MODEL_REF", "MODEL_VALUE", "PRESERVE_LAST", "PRESERVE_TOOL")
# A literal start that a special terminal needs: skips hopeless regex attempts.
_PREFIX = {"PRESERVE_LAST": "last", "PRESERVE_TOOL": "tool", "VERSION": "v", "IMPORT_PATH": "."}
_BUILD, _PASS, _WRAP = "build", "pass", "wrap"  # kinds of reduction
_WORD_START = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
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
    from lark.common import ParserConf
    from lark.parsers.lalr_analysis import LALR_Analyzer, Shift

    # Lark's public analyser, run again on the compiled rules, rather than reading the parser's
    # private `_parse_table`: the same table (the shipped JSON is byte-identical), at the cost of
    # one analysis (0.8 s on an idle core; Lark's own is read from its cache file), paid only
    # offline, by the test that keeps the JSON in step, or when parse_table.json is stale.
    analysis = LALR_Analyzer(ParserConf(lark.rules, {}, lark.options.start))
    analysis.compute_lalr()
    table = analysis.parse_table
    number = _canonical_numbers(table.states, [table.start_states[name] for name in sorted(table.start_states)], Shift)
    plans: list[list[Any]] = []
    plan_index: dict[int, int] = {}
    rows: dict[int, dict[str, list[Any]]] = {}
    for state in sorted(table.states, key=number.__getitem__):
        row: dict[str, list[Any]] = {}
        for sym, (action, arg) in sorted(table.states[state].items()):
            if action is Shift:
                row[sym] = [1, number[arg]]
            else:
                if id(arg) not in plan_index:
                    plan_index[id(arg)] = len(plans)
                    plans.append(_plan(arg))
                row[sym] = [0, plan_index[id(arg)]]
        rows[number[state]] = row
    gotos = _goto_maps(rows, plans)
    strings = {t.pattern.value: t.name for t in lark.terminals if t.pattern.type == "str"}
    specials = {t.name: t.pattern.to_regexp() for t in lark.terminals if t.name in _SPECIAL}
    starts = {name: [number[table.start_states[name]], number[table.end_states[name]]] for name in table.start_states}
    # Terminals some rule keeps in its node; the others only ever give a node its position.
    kept = sorted({sym.name for rule in lark.rules for sym in rule.expansion
                   if sym.is_term and (rule.options.keep_all_tokens or not sym.filter_out)})
    return {"grammar_sha256": grammar_sha(), "starts": starts, "states": {str(k): v for k, v in rows.items()},
            "plans": plans, "gotos": gotos, "strings": strings, "specials": specials, "kept_terminals": kept}


def _canonical_numbers(states: dict[int, dict[str, Any]], starts: list[int], shift: Any) -> dict[int, int]:
    """New numbers for Lark's states, in breadth-first order from the start states, symbols in
    name order. Lark numbers the same states in set-iteration order, which changes with the
    interpreter's hash seed: the shipped table must not depend on the process that wrote it."""
    number: dict[int, int] = {}
    queue = list(starts)
    for state in queue:  # the list grows while it is walked
        if state in number:
            continue
        number[state] = len(number)
        queue += [arg for _sym, (action, arg) in sorted(states[state].items()) if action is shift]
    for state in sorted(set(states) - set(number)):  # none in a sound table; kept, never dropped
        number[state] = len(number)
    return number


def _goto_maps(rows: dict[int, dict[str, list[Any]]], plans: list[list[Any]]) -> list[list[int]]:
    """Where a reduction leads, with the runs of unit reductions that follow it folded in.

    After reducing a rule to N with lookahead `a`, the state below the popped children P goes
    to goto(P, N). That state often reduces a unit rule on `a` (`?sum: product`: the value stays,
    only the state changes, to goto(P, sum)), and so on up the precedence ladder. The state at
    the end of that run depends only on (P, N, a): for each (N, a) this computes the map
    P -> final state, and appends its index to every reduction entry [0, plan, map]. The same
    map serves a unit reduction itself (state below it: P). Few maps are distinct, so they are
    shared; a P whose run breaks (no goto) is left out: the driver fails there, as Lark would.
    """
    column: dict[str, list[int]] = {}  # N -> states with a goto on N
    for p, row in rows.items():
        for sym, (shift, _arg) in row.items():
            if shift:
                column.setdefault(sym, []).append(p)
    maps: list[list[int]] = []
    index: dict[tuple[int, ...], int] = {}
    by_key: dict[tuple[str, str], int] = {}
    for row in rows.values():
        for sym, entry in row.items():
            if entry[0]:
                continue
            key = (plans[entry[1]][4], sym)
            if key not in by_key:
                flat: list[int] = []
                for p in sorted(column.get(key[0], ())):
                    end = _run_end(rows, plans, p, key[0], sym)
                    if end is not None:
                        flat += [p, end]
                by_key[key] = index.setdefault(tuple(flat), len(index))
                if by_key[key] == len(maps):
                    maps.append(flat)
            entry.append(by_key[key])
    return maps


def _run_end(rows: dict[int, dict[str, list[Any]]], plans: list[list[Any]], p: int, origin: str, sym: str) -> int | None:
    while True:
        goto = rows[p].get(origin)
        if goto is None or not goto[0]:
            return None
        nxt = rows[goto[1]].get(sym)
        if nxt is None or nxt[0] or not plans[nxt[1]][5]:
            return goto[1]
        origin = plans[nxt[1]][4]


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


_PARSERS: dict[str, FastParser] | None = None


def load_parser(start: str) -> "FastParser":
    """The parser for `start`, built once per process. Every start shares one action table, and
    the JSON tables are not kept once it is built: held for the process's life, they were 1.4
    MiB of lists (docs/startup.md, what a waiting `run --wait` holds)."""
    global _PARSERS
    if _PARSERS is None:
        tables = load_tables()
        built = FastParser(tables)
        _PARSERS = {name: built.starting_at(*states) for name, states in tables["starts"].items()}
    return _PARSERS[start]


class FastParser:
    def __init__(self, tables: dict[str, Any], start: str = "start") -> None:
        start_state, self.end_state = tables["starts"][start]
        self.start_state = start_state
        self.strings: dict[str, str] = tables["strings"]
        self.kept: frozenset[str] = frozenset(tables["kept_terminals"])
        raw_plans = tables["plans"]
        # Reductions: (_PASS, size, index of the one kept child) when that child replaces the
        # node (`?a: "(" b ")"`); (_WRAP, name) when the node holds the one child as it is
        # (`?atom: VAR -> var`); else (_BUILD, name, kept children, expand1, size, keeps all
        # children as they are). The action adds the goto map (state below -> next state).
        plans: list[tuple[Any, ...]] = []
        for name, keep, expand1, size, origin, unit in raw_plans:
            keep_all = [k for k, _ in keep] == list(range(size)) and not any(sp for _, sp in keep)
            if expand1 and len(keep) == 1 and not keep[0][1]:
                plans.append((_PASS, size, keep[0][0] - size))
            elif size == 1 and keep_all:
                plans.append((_WRAP, name))
            else:
                plans.append((_BUILD, name, tuple(tuple(k) for k in keep), expand1, size, keep_all))
        gotos = [dict(zip(flat[::2], flat[1::2])) for flat in tables["gotos"]]
        # state -> symbol -> next state (int: a shift or a goto) | {state below: state after the
        # run of unit reductions} (dict: a unit reduction) | (reduction plan, goto map) (tuple)
        self.actions: list[dict[str, Any]] = [{} for _ in range(1 + max(int(s) for s in tables["states"]))]
        for state, row in tables["states"].items():
            self.actions[int(state)] = {
                sym: entry[1] if entry[0] else gotos[entry[2]] if raw_plans[entry[1]][5] else plans[entry[1]] + (gotos[entry[2]],)
                for sym, entry in row.items()
            }
        patterns = {name: re.compile(rx) for name, rx in tables["specials"].items()}
        # Terminals with their own pattern, tried where the state accepts them, when the text
        # there starts with a character they can start with (a word or '.': the master regex
        # would have split them).
        self.specials: list[tuple[tuple[str, str, re.Pattern[str]], ...]] = [
            tuple((name, _PREFIX.get(name, ""), patterns[name]) for name in _SPECIAL if name in acts)
            for acts in self.actions
        ]
        self.special_firsts: list[str] = [
            "".join(sorted({ch for _, prefix, _ in found for ch in (prefix[:1] or _WORD_START)}))
            for found in self.specials
        ]

    def starting_at(self, start_state: int, end_state: int) -> "FastParser":
        """This parser for another start symbol: the same tables, shared."""
        other = copy.copy(self)
        other.start_state, other.end_state = start_state, end_state
        return other

    def parse(self, text: str) -> Tree:
        try:
            return self._parse(text)
        except (KeyError, IndexError):  # no action for a token: not a valid program
            raise FastFail() from None

    def _parse(self, text: str) -> Tree:
        actions = self.actions
        strings = self.strings
        specials = self.specials
        special_firsts = self.special_firsts
        kept = self.kept
        end_state = self.end_state
        master = _MASTER.match
        str_new = str.__new__
        token_cls = Token
        tree_cls = Tree
        new_tree = object.__new__
        group_type = _GROUP_TYPE
        stack: list[int] = [self.start_state]
        values: list[Any] = []
        push_state = stack.append
        push_value = values.append
        queue: list[tuple[str, Any]] = []  # the _INDENT/_DEDENTs after a line break, $END
        # Lark places a node at its first child's *container*: where the text of a node passed up
        # through a rule that drops tokens around it (`"(" expr ")"`) starts, the "(". Only such
        # nodes are listed here (id -> position); every other node's container is itself.
        containers: dict[int, tuple[int, int]] = {}
        levels = [0]
        depth = 0
        pos = 0
        n = len(text)
        line = 1
        line_start = 0
        while True:
            if queue:
                ttype, tok = queue.pop()
                top = stack[-1]
            else:
                top = stack[-1]
                m = master(text, pos)
                if m is None:
                    raise FastFail((line, pos - line_start + 1))
                kind = m.lastgroup
                end = m.end()
                if kind == "NL":
                    value = m.group(kind)
                    start = end - len(value)
                    pos = end
                    ttype = "_NL"
                    tok = (line, start - line_start + 1)  # never kept: only a position
                    last = value.rfind("\n")
                    if last >= 0:
                        line += value.count("\n")
                        line_start = start + last + 1
                    if depth > 0:
                        continue
                    # The indentation of the next line: _INDENT or _DEDENTs follow this _NL.
                    tail = value[last + 1:] if last >= 0 else ""
                    indent = len(tail)
                    if tail and tail.strip(" "):
                        ws = tail[: len(tail) - len(tail.lstrip(" \t\f"))]
                        indent = ws.count(" ") + ws.count("\t") * TAB_WIDTH
                    if indent > levels[-1]:
                        levels.append(indent)
                        queue.append(("_INDENT", (line, indent + 1)))
                    elif indent < levels[-1]:
                        while indent < levels[-1]:
                            levels.pop()
                            queue.append(("_DEDENT", (line, indent + 1)))
                        if indent != levels[-1]:
                            raise IndentationError_(line, indent + 1, "inconsistent indentation")
                else:
                    if kind == "WORD":
                        value = m.group(kind)
                        if value[0] in special_firsts[top] and (hit := _special(specials[top], text, end - len(value))):
                            ttype, end, value = hit
                        else:
                            row = actions[top]
                            kw = strings.get(value)
                            ttype = kw if kw is not None and (kw in row or "NAME" not in row) else "NAME"
                    elif kind == "VAR":
                        value = m.group(kind)
                        ttype = "VAR"
                    elif kind == "OP":
                        value = m.group(kind)
                        ttype = strings[value]
                        if value[0] in special_firsts[top] and (hit := _special(specials[top], text, end - len(value))):
                            ttype, end, value = hit
                        elif len(value) > 1 and ttype not in actions[top]:
                            value = value[0]  # e.g. '[]' where only '[' fits, '->' outside `match`
                            ttype = strings[value]
                            end = end - 1
                        if ttype in _OPEN:
                            depth += 1
                        elif ttype in _CLOSE and depth > 0:
                            depth -= 1
                    elif kind == "EOF":  # close the open blocks, then $END (never shifted: it ends the loop)
                        queue.append(("$END", (line, 1)))
                        while len(levels) > 1:
                            levels.pop()
                            queue.append(("_DEDENT", (line, 1)))
                        continue
                    elif kind == "WS":  # a line continuation
                        line += 1
                        line_start = pos = end
                        continue
                    else:
                        value = m.group(kind)
                        ttype = group_type[kind]
                    if ttype in kept:
                        tok = str_new(token_cls, value)
                        tok.type = ttype
                        tok.line = line
                        tok.column = end - len(value) - line_start + 1
                    else:  # a keyword or punctuation no rule keeps: only its position matters
                        tok = (line, end - len(value) - line_start + 1)
                    if kind == "STRING" or kind == "TRIPLE":
                        newlines = value.count("\n")
                        if newlines:
                            line += newlines
                            line_start = end - len(value) + value.rfind("\n") + 1
                    pos = end
            # One token through the LALR table: reductions, then its shift (`top`: stack[-1]).
            while True:
                row = actions[top]
                if ttype not in row:
                    if ttype == "$END" and top == end_state and len(stack) == 2:
                        return values[-1]
                    raise FastFail(tok if type(tok) is tuple else (tok.line, tok.column))
                act = row[ttype]
                kind_ = type(act)
                if kind_ is int:  # shift
                    push_state(act)
                    push_value(tok)
                    break
                if kind_ is dict:  # a run of unit reductions: only the state changes
                    stack[-1] = top = act[stack[-2]]
                    continue
                how = act[0]
                if how is _WRAP:  # one child, kept as it is: replace it by its node in place
                    c = values[-1]
                    value = new_tree(tree_cls)
                    value.data = act[1]
                    value.children = [c]
                    if type(c) is tuple:
                        value.line, value.column = c
                        value.empty = False
                    elif containers and id(c) in containers:
                        value.line, value.column = containers[id(c)]
                        value.empty = False
                    elif type(c) is not tree_cls or not c.empty:
                        value.line = c.line
                        value.column = c.column
                        value.empty = False
                    else:
                        value.line = value.column = 1
                        value.empty = True
                    values[-1] = value
                    stack[-1] = top = act[2][stack[-2]]
                    continue
                if how is _PASS:  # a rule whose one kept child replaces the node
                    _, size, index, goto = act
                    value = values[index]
                    if index != -size and type(value) is tree_cls:
                        containers[id(value)] = _start(values[-size], containers)
                    del values[-size:]
                    del stack[-size:]
                else:
                    _, name, keep, expand1, size, keep_all, goto = act
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
                            if not splice:
                                filtered.append(c)
                            elif filtered:
                                filtered += c.children
                            else:  # left recursion (`a+` lists): extend the spliced list in place, as Lark does
                                filtered = c.children
                    if expand1 and len(filtered) == 1:
                        value = filtered[0]
                        if type(value) is tree_cls and children[0] is not value:
                            containers[id(value)] = _start(children[0], containers)
                    else:
                        value = new_tree(tree_cls)  # Tree's slots set here: no __init__ call
                        value.data = name
                        value.children = filtered
                        for c in children:  # position of the first child, kept or filtered out
                            if type(c) is tuple:
                                value.line, value.column = c
                                value.empty = False
                                break
                            if containers and id(c) in containers:
                                value.line, value.column = containers[id(c)]
                                value.empty = False
                                break
                            if type(c) is not tree_cls or not c.empty:
                                value.line = c.line
                                value.column = c.column
                                value.empty = False
                                break
                        else:
                            value.line = value.column = 1
                            value.empty = True
                top = goto[stack[-1]]
                push_state(top)
                push_value(value)


def _start(first: Any, containers: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """Where the text of a node whose first child is `first` starts (Lark's container start)."""
    if type(first) is tuple:
        return first
    return containers.get(id(first)) or (first.line, first.column)


def _special(found: tuple[tuple[str, str, re.Pattern[str]], ...], text: str, pos: int) -> tuple[str, int, str] | None:
    """(terminal, end, text) of the first special terminal matching at `pos`, or None."""
    for name, prefix, rx in found:
        if prefix and not text.startswith(prefix, pos):
            continue
        m = rx.match(text, pos)
        if m is not None and m.end() > pos:
            return name, m.end(), m.group(0)
    return None


if __name__ == "__main__":  # python -m engine.lang.fastparse: refresh the shipped table
    from engine.lang.lark_backend import lark_parser as _lp

    TABLE_PATH.write_text(json.dumps(build_tables(_lp()), separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {TABLE_PATH}\n")
