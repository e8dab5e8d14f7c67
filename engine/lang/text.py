"""Text with interpolation: double-quoted strings and prompt bodies -> `Text` AST nodes.

`${expr}` is parsed by the language's own expression grammar (never `eval`); `$name.path` is a
soft reference (the value when set at run time, else the text as written), which is how the
origin project's prompts are written.
"""

from __future__ import annotations

import re
from typing import Callable

from engine.lang import ast
from engine.lang.diagnostics import Diagnostic
from engine.lang.parser import ExpressionError, parse_expression

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "$": "$"}
_SOFT = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z_][A-Za-z0-9_]*)*)")

# Converts a lark tree of an expression into an AST expression, positioned at (line, column).
ExprBuilder = Callable[[object, int, int], ast.Expr]


def unescape(body: str) -> str:
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), body, flags=re.S)


class _Positions:
    """(line, column) of indices into `text`, asked in increasing order: each call counts only the
    newlines since the previous one, so a body with many `$` stays linear."""

    def __init__(self, text: str, line: int, column: int) -> None:
        self.text = text
        self.index, self.line, self.line_start = 0, line, -column  # column of index i: i - line_start

    def at(self, index: int) -> tuple[int, int]:
        nl = self.text.count("\n", self.index, index)
        if nl:
            self.line += nl
            self.line_start = self.text.rfind("\n", self.index, index)
        self.index = index
        return self.line, index - self.line_start


def build_text(
    body: str,
    line: int,
    column: int,
    *,
    file: str,
    build_expr: ExprBuilder,
    diagnostics: list[Diagnostic],
    escapes: bool,
) -> ast.Text:
    """Split `body` (without quotes) into literal parts and expressions.

    `line`/`column` is the position of the body's first character.
    """
    if "$" not in body:  # most strings: one literal part
        return ast.Text(line, column, [unescape(body) if escapes else body] if body else [])
    parts: list[str | ast.Expr] = []
    literal: list[str] = []
    i = 0
    n = len(body)
    positions = _Positions(body, line, column)

    def flush() -> None:
        if literal:
            s = "".join(literal)
            parts.append(unescape(s) if escapes else s)
            literal.clear()

    while i < n:
        j = body.find("$", i)
        if j == -1:
            literal.append(body[i:])
            break
        if escapes and j > 0 and _escaped(body, j):
            literal.append(body[i : j + 1])
            i = j + 1
            continue
        literal.append(body[i:j])
        if body.startswith("${", j):
            end = _closing_brace(body, j + 2)
            if end == -1:
                literal.append(body[j:])
                break
            flush()
            src = body[j + 2 : end]
            el, ec = positions.at(j)
            parts.append(_parse_interpolation(src, el, ec, file, build_expr, diagnostics))
            i = end + 1
            continue
        m = _SOFT.match(body, j)
        if not m:
            literal.append("$")
            i = j + 1
            continue
        flush()
        el, ec = positions.at(j)
        path = tuple(p for p in m.group(2).split(".") if p)
        parts.append(ast.SoftVar(el, ec, m.group(1), path, m.group(0)))
        i = m.end()
    flush()
    return ast.Text(line, column, parts)


def _escaped(body: str, j: int) -> bool:
    k = j - 1
    count = 0
    while k >= 0 and body[k] == "\\":
        count += 1
        k -= 1
    return count % 2 == 1


def _closing_brace(body: str, start: int) -> int:
    depth = 0
    quote = ""
    for k in range(start, len(body)):
        c = body[k]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            if depth == 0:
                return k
            depth -= 1
    return -1


def _parse_interpolation(
    src: str, line: int, column: int, file: str, build_expr: ExprBuilder, diagnostics: list[Diagnostic]
) -> ast.Expr:
    if not src.strip():
        diagnostics.append(Diagnostic(file, line, column, "error", "E0007", "empty interpolation '${}'", "write an expression inside ${...}"))
        return ast.Literal(line, column, "")
    try:
        tree = parse_expression(src, file, line, column)
    except ExpressionError as exc:
        d = exc.diagnostic
        diagnostics.append(Diagnostic(d.file, d.line, d.column, d.severity, d.code, f"in interpolation: {d.message}", d.help))
        return ast.Literal(line, column, "")
    return build_expr(tree, line, column)
