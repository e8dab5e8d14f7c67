"""Source text -> parse tree, with syntax errors turned into diagnostics (E0007, E0008).

Two linear passes: `extract_plain_bodies` lifts indented plain-text prompt bodies out of the
source (a lexer cannot tell prose from code), then the LALR(1) driver of engine.lang.fastparse
lexes (contextually), tracks indentation and builds the tree. When it rejects the text, Lark
itself (engine.lang.lark_backend) parses it again to explain the error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from engine.lang.diagnostics import Diagnostic, error
from engine.lang.fastparse import FastParser, load_parser
from engine.lang.grammar import TAB_WIDTH
from engine.lang.tree import Token, Tree


@lru_cache(maxsize=2)
def _fast(start: str = "start") -> FastParser:
    return load_parser(start)


# ------------------------------------------------------------------ plain-text prompt bodies

@dataclass
class PlainBody:
    text: str
    line: int  # 1-based line of the body's first line
    column: int


@dataclass
class Prepared:
    text: str
    bodies: list[PlainBody] = field(default_factory=list)


# A prompt line ending with ':' (the body follows, indented). The pattern starts with its literal,
# which the regex engine finds fast; extract_plain_bodies keeps those that start their line.
_PROMPT_HEAD = re.compile(r"prompt\b[^\n]*?:[ \t]*(#[^\n]*)?$", re.M)
# Lark's `"""[\s\S]*?"""` unrolled: the same shortest match, without trying the closing quotes at
# every character (5x faster on a long prompt; prompts are most of a typical file's bytes).
_TRIPLE = re.compile(r'"""[^"]*(?:"(?!"")[^"]*)*"""|\'\'\'[^\']*(?:\'(?!\'\')[^\']*)*\'\'\'')


def _indent_of(line: str) -> int:
    ws = line[: len(line) - len(line.lstrip(" \t"))]
    return ws.count(" ") + ws.count("\t") * TAB_WIDTH


def extract_plain_bodies(text: str) -> Prepared:
    """Replace each indented plain-text prompt body by a `\\x00N\\x00` token on the prompt line.

    The body lines become empty lines, so every other position in the file is unchanged. A
    final body line `escalate if ...` stays in place: it is the prompt's escalation clause.
    """
    if "prompt" not in text:
        return Prepared(text)
    heads = [m for m in _PROMPT_HEAD.finditer(text)
             if not text[text.rfind("\n", 0, m.start()) + 1:m.start()].strip(" \t")]
    if not heads:
        return Prepared(text)
    spans = [(m.start(), m.end()) for m in _TRIPLE.finditer(text)] if ('"""' in text or "'''" in text) else []
    lines = text.split("\n")
    offsets = [0]
    for ln in lines:
        offsets.append(offsets[-1] + len(ln) + 1)
    bodies: list[PlainBody] = []
    edits: dict[int, str] = {}
    line_of = _line_index(offsets)
    for m in heads:
        if any(a <= m.start() < b for a, b in spans):
            continue
        head_idx = line_of(m.start())
        head_indent = _indent_of(lines[head_idx])
        j = head_idx + 1
        block: list[int] = []
        while j < len(lines):
            ln = lines[j]
            if ln.strip() == "":
                block.append(j)
                j += 1
                continue
            if _indent_of(ln) <= head_indent:
                break
            block.append(j)
            j += 1
        while block and lines[block[-1]].strip() == "":
            block.pop()
        if not block:
            continue
        first = next(i for i in block if lines[i].strip())
        if lines[first].lstrip().startswith(("escalate if", "escalate\tif")):
            continue  # a declared prompt's escalation clause, not a body
        clause_idx = None
        if len(block) > 1 and re.match(r"[ \t]*escalate[ \t]+if\b", lines[block[-1]]):
            clause_idx = block.pop()
            while block and lines[block[-1]].strip() == "":
                block.pop()
        body_lines = [lines[i] for i in block]
        common = min(_indent_of(lines[i]) for i in block if lines[i].strip())
        body = "\n".join(_dedent(ln, common) for ln in body_lines)
        stripped = body.strip()
        for q in ('"""', "'''"):
            if len(stripped) >= 6 and stripped.startswith(q) and stripped.endswith(q):
                body = stripped[3:-3]
        bodies.append(PlainBody(body, first + 1, common + 1))
        head_line = lines[head_idx]
        comment = head_line.find("#", head_line.rfind(":"))
        if comment != -1:
            head_line = head_line[:comment]
        edits[head_idx] = head_line.rstrip() + f" \x00{len(bodies) - 1}\x00"
        for i in block:
            edits[i] = ""
    if not edits:
        return Prepared(text)
    for i, new in edits.items():
        lines[i] = new
    return Prepared("\n".join(lines), bodies)


def _line_index(offsets: list[int]):
    import bisect

    def find(pos: int) -> int:
        return bisect.bisect_right(offsets, pos) - 1

    return find


def _dedent(line: str, columns: int) -> str:
    removed = 0
    i = 0
    while i < len(line) and removed < columns and line[i] in " \t":
        removed += TAB_WIDTH if line[i] == "\t" else 1
        i += 1
    return line[i:]


# ------------------------------------------------------------------ parsing

@dataclass
class ParseResult:
    tree: Tree | None
    bodies: list[PlainBody]
    diagnostics: list[Diagnostic]


def parse_source(text: str, file: str) -> ParseResult:
    """Parse one file. On a syntax error the tree is None and one diagnostic explains it."""
    if text.startswith("\ufeff"):
        text = text[1:]
    # Windows line ends are newlines (a lone CR stays what it is, e.g. inside a string).
    text = text.replace("\r\n", "\n")
    if not text.endswith("\n"):
        text += "\n"
    prepared = extract_plain_bodies(text)
    try:
        return ParseResult(_fast().parse(prepared.text), prepared.bodies, [])
    except Exception as exc:  # not a valid program: Lark's own parse says why
        where = getattr(exc, "where", None)
    return ParseResult(None, prepared.bodies, [_explain(prepared.text, file, "start", where=where)])


class ExpressionError(Exception):
    """A `${...}` that does not parse; `diagnostic` says where and why."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


_LONE_NAME = re.compile(r"(\$?)[A-Za-z_][A-Za-z0-9_]*")


def parse_expression(text: str, file: str, line: int, column: int) -> Tree:
    """Parse `${...}` contents found at (line, column) of `file` (the position of `${`)."""
    parser = _fast("expr")
    lone = _LONE_NAME.fullmatch(text)
    if lone is not None and text not in parser.strings:  # `${name}`, `${$var}`: most of them
        kind = "VAR" if lone.group(1) else "NAME"
        return Tree(kind.lower(), [Token(kind, text, 1, 1)], 1, 1, False)  # as `?atom: VAR -> var | NAME -> name`
    try:
        return parser.parse(text)
    except Exception:
        raise ExpressionError(_explain(text, file, "expr", line - 1, column + 1)) from None


def _explain(text: str, file: str, start: str, line_offset: int = 0, col_offset: int = 0,
             where: tuple[int, int] | None = None) -> Diagnostic:
    from engine.lang.lark_backend import diagnose  # Lark is only needed to explain errors

    found = diagnose(text, file, start, line_offset, col_offset)
    if found is not None:
        return found
    # Lark's contextual lexer splits a keyword glued to a name (`retryx = 3 times` as `retry x`);
    # the fast driver, which reads whole words, is the one that is right.
    line, column = where or (1, 1)
    word = re.match(r"\S{1,30}", (text.splitlines()[line - 1:line] or [""])[0][column - 1:])
    return error(file, line + line_offset, column + (col_offset if line == 1 else 0), "E0007",
                 f"unexpected {word.group(0)!r}" if word else "syntax error")
