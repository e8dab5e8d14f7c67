"""Parse tree nodes: the same shape and attribute names as Lark's Tree and Token, without
importing Lark (valid programs never need it)."""

from __future__ import annotations

from typing import Any


class Token(str):
    """A terminal: its text, type (terminal name) and 1-based position."""

    type: str
    line: int
    column: int

    def __new__(cls, type: str, value: str, line: int, column: int) -> "Token":  # noqa: A002
        tok = str.__new__(cls, value)
        tok.type = type
        tok.line = line
        tok.column = column
        return tok

    @property
    def value(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r})"


class Tree:
    """A rule's node: `data` (rule or alias name), `children`, and its position. `meta` is the
    node itself (it carries `empty`, `line`, `column`), saving one object per node."""

    __slots__ = ("data", "children", "empty", "line", "column")

    def __init__(self, data: str, children: list[Any], line: int = 1, column: int = 1, empty: bool = False) -> None:
        self.data = data
        self.children = children
        self.line = line
        self.column = column
        self.empty = empty

    @property
    def meta(self) -> "Tree":
        return self

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"
