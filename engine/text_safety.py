"""The one sanitizer for text shown on a terminal that did not come from the program itself:
file names, task, agent and flow names, agent replies and tool arguments, and error messages
quoting any of them. The console (tui) and the command line's stderr both show them through
`visible`.

A terminal obeys the control characters it is sent: ESC starts an escape sequence (OSC 52 writes
the clipboard, CSI 2J clears the screen, OSC 2 sets the window title), BEL rings, and in the C1
range 0x9B is a one-byte CSI. Each is shown as a visible sign instead: a C0 control as its Unicode
control picture (␛, ␇, ...), DEL as ␡, a C1 control as U+FFFD. The bidirectional embeddings,
overrides and isolates (U+202A-202E, U+2066-2069) reorder the text after them on screen, so a
name can read as another ("Trojan Source"): U+FFFD. So do lone surrogates (file names that are
not UTF-8 arrive as them), which no terminal encoding can write. Tab and newline stay: the
callers lay them out.
"""

from __future__ import annotations

import re

_SIGNS = {c: 0x2400 + c for c in range(32) if c not in (9, 10)} | {0x7F: 0x2421}
_SIGNS |= {c: 0xFFFD for c in (*range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0xD800, 0xE000))}

# The same set as a character class: searching first is cheaper than translating (the text
# is almost always clean, and str.translate is slow on text that is not ASCII).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def utf8_text(value: str) -> str:
    """Text the OS gave (a command-line argument, a file's name) as UTF-8: bytes that are not
    UTF-8 arrive as lone surrogates, which nothing can encode (a store or events line, a
    terminal): they become U+FFFD. Unlike `visible`, for text that is kept, not only shown."""
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def visible(text: str) -> str:
    """`text` with every character a terminal would obey (or could not write) shown as a sign."""
    return text.translate(_SIGNS) if _UNSAFE.search(text) else text
