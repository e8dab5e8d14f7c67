"""Source text -> Lark parse tree, with syntax errors turned into diagnostics (E0007, E0008).

Three passes, all linear: `extract_plain_bodies` lifts indented plain-text prompt bodies out of
the source (the lexer cannot tell prose from code), the contextual lexer tokenizes, and
`IndentPostLex` turns newlines into INDENT/DEDENT tokens, reporting bad indentation at the
line where it happens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from engine.lang.diagnostics import Diagnostic, error

TAB_WIDTH = 4
_GRAMMAR = Path(__file__).with_name("grammar.lark")


class IndentationError_(Exception):
    """Raised by the post-lexer; carries the position of the offending line."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


class IndentPostLex:
    """Newlines -> _NL, _INDENT, _DEDENT (like lark.indenter.Indenter, with tab = 4 columns,
    comment-safe indentation measurement and positioned errors)."""

    always_accept = ("_NL",)
    _OPEN = {"LPAR", "LSQB", "LBRACE"}
    _CLOSE = {"RPAR", "RSQB", "RBRACE"}

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        levels = [0]
        depth = 0
        last: Token | None = None
        for tok in stream:
            if tok.type == "_NL":
                if depth > 0:
                    continue
                yield tok
                indent_str = tok.value.rsplit("\n", 1)[-1] if "\n" in tok.value else ""
                indent_str = indent_str[: len(indent_str) - len(indent_str.lstrip(" \t\f"))]
                indent = indent_str.count(" ") + indent_str.count("\t") * TAB_WIDTH
                line = (tok.end_line or tok.line)
                if indent > levels[-1]:
                    levels.append(indent)
                    yield _marker("_INDENT", tok, line, indent)
                else:
                    while indent < levels[-1]:
                        levels.pop()
                        yield _marker("_DEDENT", tok, line, indent)
                    if indent != levels[-1]:
                        raise IndentationError_(
                            line, indent + 1,
                            f"this line is indented by {indent} columns, which matches no enclosing block "
                            f"(expected {levels[-1]})",
                        )
                continue
            if tok.type in self._OPEN:
                depth += 1
            elif tok.type in self._CLOSE and depth > 0:
                depth -= 1
            last = tok
            yield tok
        end_line = (last.end_line or last.line) if last is not None else 1
        while len(levels) > 1:
            levels.pop()
            yield Token("_DEDENT", "", 0, end_line, 1, end_line, 1, 0)


def _marker(kind: str, nl: Token, line: int, indent: int) -> Token:
    pos = nl.end_pos if nl.end_pos is not None else nl.start_pos
    return Token(kind, "", pos, line, indent + 1, line, indent + 1, pos)


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        _GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        postlex=IndentPostLex(),
        propagate_positions=True,
        maybe_placeholders=False,
        start=["start", "expr"],
        cache=True,  # lark keeps the analysed grammar in the temp dir, keyed by its hash
    )


def lark_parser() -> Lark:
    return _lark()


@lru_cache(maxsize=2)
def _fast(start: str = "start"):  # type: ignore[no-untyped-def]
    from engine.lang.fastparse import FastParser  # imports this module: load it lazily

    return FastParser(_lark(), start)


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


_PROMPT_HEAD = re.compile(r"^([ \t]*)prompt\b[^\n]*?:[ \t]*(#[^\n]*)?$", re.M)
_TRIPLE = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'')


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
    heads = list(_PROMPT_HEAD.finditer(text))
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

_TOKEN_NAMES = {
    "_NL": "a new line", "_INDENT": "an indented block", "_DEDENT": "the end of the block",
    "$END": "the end of the file", "NAME": "a name", "VAR": "a $variable", "STRING": "a string",
    "TRIPLE_STRING": 'a """triple-quoted""" text', "PLAIN_BODY": "a prompt body", "INT": "an integer",
    "NUMBER": "a number", "MODEL_REF": "provider/model-id", "MODEL_VALUE": "a value",
    "IMPORT_PATH": "a path like ./file.sr", "VERSION": "a version like v1", "LIST_SUFFIX": "'[]'",
    "OPTIONAL": "'?'", "PRESERVE_LAST": "'last N messages'", "PRESERVE_TOOL": "'tool results'",
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'", "RBRACE": "'}'",
    "COLON": "':'", "COMMA": "','", "DOT": "'.'", "EQUAL": "'='", "PLUS": "'+'", "MINUS": "'-'",
    "STAR": "'*'", "SLASH": "'/'", "PERCENT": "'%'", "TILDE": "'~'", "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
}


def readable_token(name: str) -> str:
    if name in _TOKEN_NAMES:
        return _TOKEN_NAMES[name]
    term = _term_pattern(name)
    if term is not None:
        return f"'{term}'"
    return name.lower()


@lru_cache(maxsize=None)
def _term_pattern(name: str) -> str | None:
    for t in _lark().terminals:
        if t.name == name and t.pattern.type == "str":
            return t.pattern.value
    return None


def _describe_found(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "_NL":
        return "end of line"
    if tok.type in ("_INDENT", "_DEDENT"):
        return "change of indentation"
    val = str(tok.value)
    if len(val) > 30:
        val = val[:27] + "..."
    return repr(val)


# Tokens that can start an expression: listed as one entry in "expected one of".
_EXPR_START = {"VAR", "NAME", "STRING", "INT", "NUMBER", "LPAR", "LSQB", "LBRACE", "MINUS", "NOT", "TRUE",
               "FALSE", "NULL", "FILTER", "INITIAL", "DOT", "PRESERVE_LAST", "PRESERVE_TOOL"}


def _expected_help(expected: set[str] | frozenset[str]) -> str | None:
    expected = set(expected)
    names: set[str] = set()
    if len(expected & _EXPR_START) >= 5:
        expected -= _EXPR_START
        names.add("an expression")
    names |= {readable_token(e) for e in expected if e not in ("_INDENT", "_DEDENT") or len(expected) == 1}
    names = sorted(names)
    if not names:
        return None
    if len(names) > 12:
        names = names[:12] + ["..."]
    return "expected one of: " + ", ".join(names)


@dataclass
class ParseResult:
    tree: Tree | None
    bodies: list[PlainBody]
    diagnostics: list[Diagnostic]


def parse_source(text: str, file: str) -> ParseResult:
    """Parse one file. On a syntax error the tree is None and one diagnostic explains it."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.endswith("\n"):
        text += "\n"
    prepared = extract_plain_bodies(text)
    try:
        tree = _fast().parse(prepared.text)
    except Exception:  # not a valid program (or a driver bug): Lark's own parse says why
        tree = None
    if tree is not None:
        return ParseResult(tree, prepared.bodies, [])
    try:
        tree = _lark().parse(prepared.text, start="start")
    except IndentationError_ as exc:
        return ParseResult(None, prepared.bodies, [error(file, exc.line, exc.column, "E0008", str(exc))])
    except UnexpectedInput as exc:
        return ParseResult(None, prepared.bodies, [syntax_diagnostic(exc, file, prepared.text)])
    return ParseResult(tree, prepared.bodies, [])


def syntax_diagnostic(exc: UnexpectedInput, file: str, text: str, line_offset: int = 0, col_offset: int = 0) -> Diagnostic:
    """One clear E0007/E0008 diagnostic for a Lark error."""
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        line = (tok.line or 1)
        col = (tok.column or 1)
        if tok.type == "$END":
            line, col = _end_position(text)
        expected = set(exc.expected or ())
        if tok.type == "_INDENT":
            return error(file, line + line_offset, col, "E0008", "unexpected indentation",
                         "this line is indented more than the line before it, but no block starts there")
        if expected == {"_INDENT"} or (tok.type in ("_DEDENT", "_NL", "$END") and expected <= {"_INDENT", "_NL"} and "_INDENT" in expected):
            return error(file, line + line_offset, col, "E0008", "expected an indented block",
                         "indent the lines of the block under the line ending with ':' or 'do'")
        if tok.type == "_DEDENT" and "_NL" not in expected and "END" in expected:
            return error(file, line + line_offset, col, "E0008", "block is missing its closing 'end'",
                         "add 'end' at the indentation of the line that opened the block")
        msg = f"unexpected {_describe_found(tok)}"
        return error(file, line + line_offset, col + (col_offset if line == 1 else 0), "E0007", msg, _expected_help(expected))
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else ""
        what = "unterminated string" if ch in "\"'" else f"unexpected character {ch!r}"
        allowed = set(exc.allowed or ())
        return error(file, exc.line + line_offset, exc.column + (col_offset if exc.line == 1 else 0), "E0007", what,
                     _expected_help(allowed) if allowed and ch not in "\"'" else None)
    if isinstance(exc, UnexpectedEOF):
        line, col = _end_position(text)
        return error(file, line + line_offset, col, "E0007", "unexpected end of file", _expected_help(set(exc.expected or ())))
    return error(file, 1, 1, "E0007", f"syntax error: {exc}")


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line, col


def parse_expression(text: str) -> Tree:
    """Parse `${...}` contents; raises lark's UnexpectedInput on bad syntax."""
    try:
        return _fast("expr").parse(text)
    except Exception:  # Lark's own parse explains the error
        return _lark().parse(text, start="expr")
