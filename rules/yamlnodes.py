"""Position-aware YAML reading: every value keeps its node, so every error names FILE:LINE:COL.

PyYAML's `compose` gives nodes with `start_mark`; we validate the node tree directly instead of
the plain objects `safe_load` returns, which have lost their positions. Shared by the rules
loader and the answers file.
"""

from __future__ import annotations

import difflib
import math
from typing import Iterable

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.positions import byte_position

STR = "tag:yaml.org,2002:str"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
BOOL = "tag:yaml.org,2002:bool"
NULL = "tag:yaml.org,2002:null"


class YamlError(Exception):
    """An invalid document: `FILE:LINE:COL: message` (1-based)."""

    def __init__(self, file: str, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column
        self.message = message

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column}: {self.message}"
        return f"{self.file}: {self.message}"


class YamlUnreadable(YamlError):
    """The file could not be read at all (missing, a directory: no position; not UTF-8: the
    bad byte's)."""

    def __init__(self, file: str, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(file, line, column, message)


def read_text(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return data.decode("utf-8")
    except FileNotFoundError:
        raise YamlUnreadable(path, "cannot read file: no such file") from None
    except IsADirectoryError:
        raise YamlUnreadable(path, "cannot read file: it is a directory") from None
    except UnicodeDecodeError as exc:
        line, column = byte_position(data, exc.start)
        raise YamlUnreadable(path, f"cannot read file: not UTF-8 text ({exc.reason})", line, column) from None
    except OSError as exc:
        raise YamlUnreadable(path, f"cannot read file: {exc.strerror or exc}") from None


class Reader:
    """Validating accessors over one composed document."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self._loader = yaml.SafeLoader(text)
        try:
            self.root: Node | None = self._loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or "invalid YAML"
            line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            raise YamlError(file, line, col, f"invalid YAML: {problem}") from None
        except RecursionError:  # PyYAML composes recursively: absurd nesting must not crash us
            mark = self._loader.get_mark()
            raise YamlError(file, mark.line + 1, mark.column + 1, "invalid YAML: nested too deeply") from None
        except yaml.YAMLError as exc:  # e.g. a reader error on control characters
            mark = getattr(exc, "position", None)
            raise YamlError(file, 1, (mark or 0) + 1, f"invalid YAML: {exc}") from None
        finally:
            self._loader.dispose()

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
        return bool(self._loader.construct_object(node))

    def number(self, node: Node, what: str, *, minimum: float = 0.0, integer: bool = False) -> float:
        kinds = (INT,) if integer else (INT, FLOAT)
        if not isinstance(node, ScalarNode) or node.tag not in kinds:
            expected = "a whole number" if integer else "a number"
            raise self.error(node, f"{what} must be {expected}, not {describe(node)}")
        value = self._loader.construct_object(node)
        if not math.isfinite(value):
            raise self.error(node, f"{what} must be a finite number")
        if value < minimum:
            raise self.error(node, f"{what} must be at least {minimum:g}, not {value:g}")
        return int(value) if integer else float(value)


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


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (expected one of: {', '.join(choices)})"
