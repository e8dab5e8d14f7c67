"""The grammar both parsers read (the fast LALR driver, and Lark when an error needs explaining)
and the indentation rule they share."""

from __future__ import annotations

from pathlib import Path

TAB_WIDTH = 4
GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")


class IndentationError_(Exception):
    """Raised by the post-lexer; carries the position of the offending line."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
