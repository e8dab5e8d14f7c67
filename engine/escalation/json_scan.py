"""JSON values amid untrusted text (agent replies), found in linear time.

Trying a JSON decode at every `{` is quadratic: a reply of a million `{` made the decoder read
the rest of the text a million times. Here one pass over the text finds the balanced bracket
spans (string-aware: a brace inside a JSON string does not count), and the decoder then reads
each character at most twice:

- a span that decodes is searched as a whole; the spans inside it are not decoded again;
- a span that fails at position P was valid up to P, so a span inside it that is still open at P
  fails at P too and is skipped; spans inside it that closed before P are whole JSON values.

(Each decode gets its own slice of the text; a slice is copied at most once per nesting level.)

Bounded as well: only the first MAX_SCAN_CHARS characters are looked at, brackets nested deeper
than MAX_DEPTH end the span they are in, and with `needle` only spans containing it are decoded.
What the single pass does not find: a value that starts inside an unterminated quote of a
preceding unclosed bracket on the same line (a JSON string cannot hold a raw line break, so a
stray quote only hides the rest of its line).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from typing import Any, Iterator

MAX_SCAN_CHARS = 256 * 1024  # a longer reply is looked at up to here (about 60 ms at worst)
MAX_DEPTH = 64  # deeper brackets are not a value an agent means (and would exhaust the decoder)

_DECODER = json.JSONDecoder()
_BRACKET_OR_QUOTE = re.compile(r'[{}\[\]"]')
# The rest of a JSON string after its opening quote: stops at the closing quote, at a raw
# control character (not allowed in JSON strings) or at the end. Unrolled, so it cannot backtrack.
_STRING_REST = re.compile(r'[^"\\\x00-\x1f]*(?:\\.[^"\\\x00-\x1f]*)*', re.DOTALL)
_CLOSER = {"}": "{", "]": "["}


def json_values(text: str, openers: str = "{", needle: str | None = None) -> Iterator[Any]:
    """The outermost JSON values (objects for "{", arrays for "[") in `text`, in order.

    With `needle`, only spans whose text contains it are decoded. Never raises on any text.
    """
    text = text[:MAX_SCAN_CHARS]
    hits = _positions(text, needle) if needle else None
    if hits == []:
        return
    covered = -1  # end of the last span decoded: what lies inside was searched with it
    failed_at = -1  # where the decoder failed on the last span that did not decode
    for start, end in _spans(text, openers, hits, len(needle or "")):
        if start <= covered or start < failed_at <= end:
            continue
        try:
            # On its own slice: the error's line and column are counted from the slice's start,
            # not from the start of the text (that count made many small failures quadratic).
            value, _ = _DECODER.raw_decode(text[start : end + 1])
        except json.JSONDecodeError as exc:
            failed_at = start + exc.pos
            continue
        except RecursionError:  # only if the caller's stack is already deep: skip the span
            covered = end
            continue
        covered = end
        yield value


def _positions(text: str, needle: str) -> list[int]:
    found, at = [], text.find(needle)
    while at != -1:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _spans(text: str, openers: str, hits: list[int] | None, width: int) -> list[tuple[int, int]]:
    """(start, end) of every balanced span opened by one of `openers` (end inclusive), sorted by
    start; with `hits`, only the spans containing one of those positions (`width` long)."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[str, int]] = []  # open brackets: (bracket, position)
    start_at = re.compile("[" + re.escape(openers) + "]")
    i, n = 0, len(text)
    while i < n:
        if not stack:  # prose between values: quotes here are not JSON strings
            m = start_at.search(text, i)
            if m is None:
                break
            i = m.start()
            stack.append((text[i], i))
            i += 1
            continue
        m = _BRACKET_OR_QUOTE.search(text, i)
        if m is None:
            break
        i, char = m.start(), m.group()
        if char == '"':
            j = _STRING_REST.match(text, i + 1).end()  # type: ignore[union-attr]  # always matches
            if j < n and text[j] == '"':
                i = j + 1
            else:  # unterminated or a raw control character: what is open is not JSON
                stack.clear()
                i = j
            continue
        if char in "{[":
            if len(stack) >= MAX_DEPTH:
                stack.clear()  # restart here, at depth 0
                continue
            stack.append((char, i))
            i += 1
            continue
        bracket, opened = stack.pop()
        if bracket != _CLOSER[char]:
            stack.clear()  # mismatched: nothing open can be JSON
        elif bracket in openers and (hits is None or _contains(hits, opened, i, width)):
            spans.append((opened, i))
        i += 1
    spans.sort()
    return spans


def _contains(hits: list[int], start: int, end: int, width: int) -> bool:
    k = bisect_right(hits, start)
    return k < len(hits) and hits[k] + width <= end
