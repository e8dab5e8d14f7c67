"""One YAML document from an untrusted file: a node tree with positions, or a refusal at one.

PyYAML's safe loading never runs code, but a hostile file can still crash or exhaust whoever
uses the result. Composing here (no Python objects are constructed at all) refuses, each at
its position in the file:

- unprintable characters (NUL, ESC, BEL, DEL, ...): PyYAML only raises a position-less error;
- an escape beyond Unicode (`"\\U99999999"`), on which PyYAML crashes;
- tags other than the core `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!seq`, `!!map`
  (so no `!!python/...`, `!!timestamp`, `!foo`), and a core tag on a value it does not fit
  (`!!int "abc"`), so that reading a scalar's value later cannot fail;
- numbers longer than MAX_NUMBER_CHARS characters (Python refuses 4,300-digit integers, and a
  YAML 1.1 base-60 integer like `1:2:3:...` takes quadratic time to convert);
- an alias inside the node it names (`&a [*a]`): a cycle no reader of the data expects;
- more than MAX_VALUES values once every alias is expanded (a "billion laughs" bomb);
- nesting deeper than MAX_DEPTH (PyYAML composes recursively);
- lone surrogates (`"\\ud800"`), which no UTF-8 output can carry.

The schema is PyYAML's YAML 1.1 with three changes: timestamps stay strings, `<<` is an
ordinary key (no merge keys), and YAML 1.2's exponent floats without a dot (`1e9`) are numbers.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.error import Mark, MarkedYAMLError
from yaml.events import AliasEvent, MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import Node, ScalarNode

from engine.positions import char_position

STR = "tag:yaml.org,2002:str"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
BOOL = "tag:yaml.org,2002:bool"
NULL = "tag:yaml.org,2002:null"
SEQ = "tag:yaml.org,2002:seq"
MAP = "tag:yaml.org,2002:map"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_MERGE = "tag:yaml.org,2002:merge"

MAX_VALUES = 1_000_000
MAX_DEPTH = 100
MAX_NUMBER_CHARS = 100

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_SCALARS = {
    STR: yaml.constructor.SafeConstructor.construct_yaml_str,
    INT: yaml.constructor.SafeConstructor.construct_yaml_int,
    FLOAT: yaml.constructor.SafeConstructor.construct_yaml_float,
    BOOL: yaml.constructor.SafeConstructor.construct_yaml_bool,
    NULL: yaml.constructor.SafeConstructor.construct_yaml_null,
}
_COLLECTIONS = {SequenceStartEvent: (SEQ, "a list"), MappingStartEvent: (MAP, "a mapping")}
_UNSUPPORTED = "is not supported (only the core tags !!str, !!int, !!float, !!bool, !!null, !!seq and !!map)"


class Refused(Exception):
    """What is wrong with the text and where (1-based line and column)."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message

    @classmethod
    def at(cls, mark: Mark | None, message: str) -> "Refused":
        return cls(mark.line + 1, mark.column + 1, message) if mark else cls(1, 1, message)


def compose(text: str) -> Node | None:
    """The node tree of the single document in `text` (None when it is empty)."""
    loader = None
    try:
        loader = _Loader(text)
        return loader.get_single_node()
    except yaml.reader.ReaderError as exc:
        line, column = char_position(text, exc.position)
        escape = f"\\x{exc.character:02x}" if exc.character <= 0xFF else f"\\u{exc.character:04x}"
        raise Refused(line, column, f"unprintable character U+{exc.character:04X} is not allowed "
                      f"(in a double-quoted string, write it as the escape {escape})") from None
    except MarkedYAMLError as exc:
        raise Refused.at(exc.problem_mark or exc.context_mark, f"invalid YAML: {exc.problem or exc.context}") from None
    except (ValueError, OverflowError):
        # PyYAML's scanner calls chr() unchecked on a "\UXXXXXXXX" escape; it stops just after the U.
        if loader is None or text[loader.index - 2 : loader.index] != "\\U":
            raise
        mark, escape = loader.get_mark(), text[loader.index - 2 : loader.index + 8]
        raise Refused(mark.line + 1, mark.column - 1, f"invalid escape: {escape} is not a Unicode character") from None
    finally:
        if loader is not None:
            loader.dispose()


def scalar(node: ScalarNode) -> Any:
    """The Python value of a composed scalar (str, int, float, bool or None); never fails."""
    return _SCALARS[node.tag](_CONSTRUCTOR, node)


class _Resolver(yaml.resolver.Resolver):
    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_TIMESTAMP, _MERGE)]
        for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
    }


_Resolver.add_implicit_resolver(
    FLOAT, re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"), list("-+0123456789.")
)


class _LimitedComposer(yaml.composer.Composer):
    """PyYAML's composer, counting and checking every node as it is made."""

    def __init__(self) -> None:
        super().__init__()
        self._values = 0  # nodes so far, each alias counting the nodes it repeats
        self._depth = 0
        self._open: set[str] = set()  # anchors whose node is still being composed
        self._sizes: dict[str, int] = {}  # anchor -> how many nodes it stands for

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            if event.anchor in self._open:
                raise Refused.at(event.start_mark, f"alias *{event.anchor} is inside the node it names (a cycle)")
            node = super().compose_node(parent, index)  # an undefined alias is its error
            self._count(self._sizes[event.anchor], event.start_mark)
            return node
        before = self._values
        self._count(1, event.start_mark)
        if type(event) in _COLLECTIONS:
            self._check_collection(event)
        if event.anchor is not None:
            self._open.add(event.anchor)
        self._depth += 1
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._open.discard(event.anchor)
            self._sizes[event.anchor] = self._values - before
        if isinstance(event, ScalarEvent):
            self._check_scalar(node, event.tag)
        return node

    def _count(self, n: int, mark: Mark) -> None:
        self._values += n
        if self._values > MAX_VALUES:
            raise Refused.at(mark, f"more than {MAX_VALUES:,} values (an alias counts as all the values it repeats)")

    def _check_collection(self, event: SequenceStartEvent | MappingStartEvent) -> None:
        if self._depth >= MAX_DEPTH:
            raise Refused.at(event.start_mark, f"nested too deeply (more than {MAX_DEPTH} levels)")
        tag, kind = _COLLECTIONS[type(event)]
        if event.tag in (None, "!", tag):
            return
        if event.tag in _SCALARS or event.tag in (SEQ, MAP):
            raise Refused.at(event.start_mark, f"tag {_short(event.tag)} does not go on {kind}")
        raise Refused.at(event.start_mark, f"tag {_short(event.tag)} {_UNSUPPORTED}")

    def _check_scalar(self, node: Node, explicit: str | None) -> None:
        surrogate = _SURROGATE.search(node.value)
        if surrogate:
            raise Refused.at(node.start_mark, f"the escape \\u{ord(surrogate.group()):04x} is half of a UTF-16 surrogate "
                             "pair, not a character (write the character itself, or \\U and its 8 hex digits)")
        if explicit not in (None, "!"):
            if node.tag in (SEQ, MAP):
                raise Refused.at(node.start_mark, f"tag {_short(node.tag)} does not go on a single value")
            if node.tag not in _SCALARS:
                raise Refused.at(node.start_mark, f"tag {_short(node.tag)} {_UNSUPPORTED}")
            if node.tag != STR and self.resolve(ScalarNode, node.value, (True, False)) != node.tag:
                raise Refused.at(node.start_mark, f"{node.value[:40]!r} is not a valid {_short(node.tag)}")
        if node.tag in (INT, FLOAT) and len(node.value) > MAX_NUMBER_CHARS:
            raise Refused.at(node.start_mark, f"number too long: {len(node.value):,} characters (at most {MAX_NUMBER_CHARS})")


class _Loader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, _LimitedComposer, _Resolver):
    """SafeLoader's parts without a constructor: composing only."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        _LimitedComposer.__init__(self)
        _Resolver.__init__(self)


def _short(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:") :] if tag.startswith("tag:yaml.org,2002:") else tag
