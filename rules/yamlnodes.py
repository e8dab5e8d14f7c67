"""Position-aware YAML reading: every value keeps its node, so every error names FILE:LINE:COL.

`rules.yamlload` composes the document (refusing what a hostile file could do to us); we
validate the node tree directly instead of plain Python objects, which have lost their
positions. Shared by the rules loader, the script file and the answers file.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Any, Iterable

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.files import UnreadableFile, read_limited
from engine.positions import byte_position
from engine.text_safety import visible
from rules.yamlload import BOOL, FLOAT, INT, NULL, STR, Refused, compose, scalar

MAX_FILE_BYTES = 4 << 20  # 4 MiB: far beyond any hand-written file, and read in a few seconds


# Messages quote the file's own text (keys, task names, a regex's offending part): shown through
# the one sanitizer (control characters as signs), so printing an error cannot drive the terminal.


class YamlError(Exception):
    """An invalid document: `FILE:LINE:COL: message` (1-based), on one printable line."""

    def __init__(self, file: str, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column
        self.message = visible(message).replace("\n", "␊")

    def __str__(self) -> str:
        file = visible(self.file).replace("\n", "␊")
        if self.line:
            return f"{file}:{self.line}:{self.column}: {self.message}"
        return f"{file}: {self.message}"


class YamlUnreadable(YamlError):
    """The file could not be read at all (missing, a directory: no position; not UTF-8: the
    bad byte's)."""

    def __init__(self, file: str, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(file, line, column, message)


def read_text(path: str) -> str:
    """The UTF-8 text of a regular file of at most MAX_FILE_BYTES (never blocks on a FIFO)."""
    try:
        data = read_limited(Path(path), MAX_FILE_BYTES)
        return data.decode("utf-8")
    except UnreadableFile as exc:
        raise YamlUnreadable(path, f"cannot read file: {exc}") from None
    except UnicodeDecodeError as exc:
        line, column = byte_position(data, exc.start)
        raise YamlUnreadable(path, f"cannot read file: not UTF-8 text ({exc.reason})", line, column) from None


class Reader:
    """Validating accessors over one composed document."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        try:
            self.root: Node | None = compose(text)
        except Refused as exc:
            raise YamlError(file, exc.line, exc.column, exc.message) from None

    def error(self, node: Node | None, message: str) -> YamlError:
        if node is None:
            return YamlError(self.file, 1, 1, message)
        return YamlError(self.file, node.start_mark.line + 1, node.start_mark.column + 1, message)

    # -- containers ------------------------------------------------------------------------

    def mapping(self, node: Node, what: str, allowed: Iterable[str] | None = None) -> dict[str, tuple[Node, Node]]:
        """key text -> (key node, value node); refuses non-mappings, duplicate and unknown keys."""
        if not isinstance(node, MappingNode):
            raise self.error(node, f"{what} must be a mapping, not {describe(node)}")
        allowed_list = list(allowed) if allowed is not None else None
        result: dict[str, tuple[Node, Node]] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise self.error(key_node, f"{what}: keys must be plain names")
            key = str(key_node.value)
            if key in result:
                raise self.error(key_node, f"{what}: duplicate key {key!r}")
            if allowed_list is not None and key not in allowed_list:
                raise self.error(key_node, f"{what}: unknown key {key!r}{did_you_mean(key, allowed_list)}")
            result[key] = (key_node, value_node)
        return result

    def sequence(self, node: Node, what: str) -> list[Node]:
        if not isinstance(node, SequenceNode):
            raise self.error(node, f"{what} must be a list, not {describe(node)}")
        return list(node.value)

    def require(self, entries: dict[str, tuple[Node, Node]], key: str, parent: Node, what: str) -> Node:
        if key not in entries:
            raise self.error(parent, f"{what}: missing required key {key!r}")
        return entries[key][1]

    # -- scalars -----------------------------------------------------------------------------

    def is_null(self, node: Node) -> bool:
        return isinstance(node, ScalarNode) and node.tag == NULL

    def string(self, node: Node, what: str, *, allow_empty: bool = False) -> str:
        if not isinstance(node, ScalarNode) or node.tag != STR:
            raise self.error(node, f"{what} must be a string, not {describe(node)}")
        value = str(node.value)
        if not allow_empty and not value.strip():
            raise self.error(node, f"{what} must not be empty")
        return value

    def boolean(self, node: Node, what: str) -> bool:
        if not isinstance(node, ScalarNode) or node.tag != BOOL:
            raise self.error(node, f"{what} must be true or false, not {describe(node)}")
        return bool(scalar(node))

    def number(self, node: Node, what: str, *, maximum: float, minimum: float = 0.0, integer: bool = False) -> float:
        """A number in [minimum, maximum]: every number the files hold has a sane upper bound."""
        kinds = (INT,) if integer else (INT, FLOAT)
        if not isinstance(node, ScalarNode) or node.tag not in kinds:
            expected = "a whole number" if integer else "a number"
            raise self.error(node, f"{what} must be {expected}, not {describe(node)}")
        value = scalar(node)  # at most 100 characters (rules.yamlload): no overflow below
        if not math.isfinite(value):
            raise self.error(node, f"{what} must be a finite number")
        if value < minimum:
            raise self.error(node, f"{what} must be at least {_shown(minimum)}, not {_shown(value)}")
        if value > maximum:
            raise self.error(node, f"{what} must be at most {_shown(maximum)}, not {_shown(value)}")
        return int(value) if integer else float(value)

    # -- free-form data ----------------------------------------------------------------------

    def plain(self, node: Node) -> Any:
        """Plain Python data (dict, list, str, int, float, bool, None) for free-form parts.

        Aliases become independent copies (their expanded size is bounded at composing);
        mapping keys must be scalars and distinct, as everywhere else in our files.
        """
        if isinstance(node, ScalarNode):
            return scalar(node)
        if isinstance(node, SequenceNode):
            return [self.plain(item) for item in node.value]
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise self.error(key_node, "keys must be plain values, not a list or a mapping")
            key = scalar(key_node)
            if key in result:
                raise self.error(key_node, f"duplicate key {key!r}")
            result[key] = self.plain(value_node)
        return result


def describe(node: Node | None) -> str:
    """How a wrong value reads in an error: 'a list', 'the number 3', 'null'."""
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    if isinstance(node, ScalarNode):
        if node.tag == NULL:
            return "null (nothing)"
        if node.tag in (INT, FLOAT):
            return f"the number {node.value}"
        if node.tag == BOOL:
            return f"the boolean {node.value}"
        return f"the string {node.value!r}"
    return "nothing"


def _shown(value: float) -> str:
    """`31536000` rather than `3.1536e+07`; `1e+300` for what no one can read digit by digit."""
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else f"{value:g}"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (expected one of: {', '.join(choices)})"
