"""Where a byte offset falls in a file, as people count: 1-based line and column."""

from __future__ import annotations


def byte_position(data: bytes, offset: int) -> tuple[int, int]:
    """(line, column) of byte `offset` of `data` (for the bad byte of a non-UTF-8 file)."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - start + 1


def char_position(text: str, index: int) -> tuple[int, int]:
    """(line, column) of character `index` of `text`."""
    start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - start + 1
