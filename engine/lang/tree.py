"""Parse tree nodes: the same shape and attribute names as Lark's Tree and Token, without
importing Lark (valid programs never need it)."""

from __future__ import annotations

from typing import Any


class Token(str):
    """A terminal: its text, type (terminal name) and 1-based position."""

    type: str
    value: str
    start_pos: int
    line: int
    column: int
    end_line: int

    def __new__(cls, type: str, value: str, start_pos: int, line: int, column: int) -> "Token":  # noqa: A002
        tok = str.__new__(cls, value)
        tok.type = type
        tok.value = value
        tok.start_pos = start_pos
        tok.line = line
        tok.column = column
        tok.end_line = line
        return tok

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r})"


class Meta:
    __slots__ = ("empty", "line", "column")

    def __init__(self, line: int = 1, column: int = 1, empty: bool = False) -> None:
        self.empty = empty
        self.line = line
        self.column = column


NO_META = Meta(empty=True)


class Tree:
    """A rule's node: `data` (rule or alias name), `children`, `meta` (position)."""

    __slots__ = ("data", "children", "meta")

    def __init__(self, data: str, children: list[Any], meta: Meta = NO_META) -> None:
        self.data = data
        self.children = children
        self.meta = meta

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"
