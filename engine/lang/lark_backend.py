"""Lark itself: the grammar's analysis (for the fast driver's table) and the error path.

Only loaded when a program has a syntax error or when the shipped parse table is stale: valid
programs are parsed by engine.lang.fastparse without importing Lark at all.
"""

from __future__ import annotations

from functools import lru_cache
import re
from typing import Iterator

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from engine.lang.diagnostics import Diagnostic, error
from engine.lang.grammar import GRAMMAR_PATH, TAB_WIDTH, IndentationError_
from engine.private import user_cache_folder


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


def _cache_file() -> str | bool:
    """Lark's analysis cache, in the user's own cache folder (never a shared temp dir, nor one
    under the current folder); False: none."""
    base = user_cache_folder()
    if base is None:
        return False
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(base / "grammar.lark-cache")


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        postlex=IndentPostLex(),
        propagate_positions=True,
        maybe_placeholders=False,
        start=["start", "expr"],
        cache=_cache_file(),  # lark keys the file by the grammar's hash
    )


def lark_parser() -> Lark:
    return _lark()


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


def diagnose(text: str, file: str, start: str = "start", line_offset: int = 0, col_offset: int = 0) -> Diagnostic | None:
    """Parse with Lark; the diagnostic for the first error, or None when Lark accepts it."""
    try:
        _lark().parse(text, start=start)
    except IndentationError_ as exc:
        return error(file, exc.line + line_offset, exc.column, "E0008", str(exc))
    except UnexpectedInput as exc:
        return syntax_diagnostic(exc, file, text, line_offset, col_offset)
    return None


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
            header = _header_missing_end(text, line)
            if header is not None:  # `prompt greeting` then an indented body: the ':' is missing
                hline, hcol, want = header
                return error(file, hline + line_offset, hcol, "E0007", f"expected '{want}' at the end of this line",
                             f"a block's first line ends with '{want}' before its indented body")
            return error(file, line + line_offset, col, "E0008", "unexpected indentation",
                         "this line is indented more than the line before it, but no block starts there")
        ending = {"COLON": ":", "DO": "do"}.keys() & expected
        if tok.type == "_NL" and ending and _indented_after(text, line):  # `on failure` then its body
            want = ":" if "COLON" in ending else "do"
            return error(file, line + line_offset, col, "E0007", f"expected '{want}' at the end of this line",
                         f"a block's first line ends with '{want}' before its indented body")
        misspelt = _misspelt_keyword(text, line, col)
        if misspelt is not None:
            word, wcol, keyword = misspelt
            return error(file, line + line_offset, wcol + (col_offset if line == 1 else 0), "E0007",
                         f"unexpected {word!r}", f"did you mean '{keyword}'?")
        if (expected == {"_INDENT"} or (tok.type in ("_DEDENT", "_NL", "$END") and expected <= {"_INDENT", "_NL"} and "_INDENT" in expected)
                or _opens_block_before(text, line, col)):
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


# Lines that open a block: the word they start with, and what must end them.
_BLOCK_HEADS = {"prompt": ":", "agent": ":", "flow": ":", "schema": ":", "model": ":", "tool": ":", "policy": ":",
                "if": ":", "elif": ":", "else": ":", "on": "do", "after": "do", "for": "do", "loop": "do",
                "parallel": "do"}
# Words that start a statement or a definition: a misspelt one gets "did you mean".
KEYWORDS = ("import", "model", "schema", "tool", "retry", "timeout", "policy", "prompt", "agent", "flow", "on",
            "after", "run", "call", "escalate", "return", "log", "notify", "push", "continue", "abort", "fail",
            "mask", "block", "warn", "if", "elif", "else", "for", "loop", "parallel", "match", "when")
_WORD = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_]*)")


def _header_missing_end(text: str, line: int) -> tuple[int, int, str] | None:
    """(line, column, ':' or 'do') of the block header before `line` that lacks its ending."""
    lines = text.splitlines()
    for n in range(line - 1, 0, -1):
        code = lines[n - 1].split("#", 1)[0].rstrip()
        if not code.strip():
            continue
        m = _WORD.match(code)
        word = m.group(1) if m else ""
        want = ":" if word == "on" and code.split()[1:2] == ["failure"] else _BLOCK_HEADS.get(word)
        if want is None or code.endswith(":") or code.endswith(" do"):
            return None
        return n, len(code) + 1, want
    return None


def _indented_after(text: str, line: int) -> bool:
    """The next line with code is indented more than line `line`."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return False
    here = lines[line - 1]
    for after in lines[line:]:
        if after.split("#", 1)[0].strip():
            return _indent(after) > _indent(here)
    return False


def _indent(line: str) -> int:
    ws = line[: len(line) - len(line.lstrip(" \t"))]
    return ws.count(" ") + ws.count("\t") * TAB_WIDTH


def _misspelt_keyword(text: str, line: int, col: int) -> tuple[str, int, str] | None:
    """A syntax error on a line whose first word is not a keyword but close to one (`retrun $x`):
    (the word, its column, the keyword)."""
    import difflib

    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    m = _WORD.match(lines[line - 1])
    if m is None or m.group(1) in KEYWORDS or col < m.start(1) + 1:
        return None
    rest = lines[line - 1][m.end(1):].lstrip()
    if rest.startswith(("=", ".", "(")):  # an assignment or a call: the word is a name
        return None
    close = difflib.get_close_matches(m.group(1), KEYWORDS, n=1, cutoff=0.75)
    return (m.group(1), m.start(1) + 1, close[0]) if close else None


def _opens_block_before(text: str, line: int, col: int) -> bool:
    """The token starts its line and the line before it (comments and blank lines aside) ends
    with ':' or 'do': a block was opened there and this line is not indented under it."""
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return False
    here = lines[line - 1]
    indent = len(here) - len(here.lstrip())
    if col - 1 != indent or not here.strip():  # not the first thing on its line
        return False
    for before in reversed(lines[: line - 1]):
        code = before.split("#", 1)[0].rstrip()
        if code:
            opens = code.endswith(":") or code.endswith(" do") or code.strip() == "do"
            return opens and indent <= len(code) - len(code.lstrip())
    return False


def _end_position(text: str) -> tuple[int, int]:
    stripped = text.rstrip()
    line = stripped.count("\n") + 1
    col = len(stripped) - (stripped.rfind("\n") + 1) + 1
    return line, col


