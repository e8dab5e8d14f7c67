"""What a workflow says about itself in its opening comment, for the console's start screen: a
one-line description and a sample input.

    streetrace v1

    # description: Asks you JWT or sessions, then waits for your answer
    # sample input: Fix login
    # Any other comment lines follow.

Both keys are optional and case-insensitive. Without `description:`, the opening comment's first
paragraph (up to a blank line or a line that is only `#`) stands for it. Only comment lines
before the first line of code count, and only the file's first HEAD_BYTES are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HEAD_BYTES = 16 * 1024  # an opening comment is a few lines; a huge file costs no more than this
_KEY = re.compile(r"(description|sample input)\s*:\s*(.*)", re.IGNORECASE)
_VERSION = re.compile(r"streetrace\s+v\d+\s*$")


@dataclass(frozen=True)
class About:
    description: str = ""
    sample_input: str = ""


def about(text: str) -> About:
    """The description and sample input of a workflow whose source starts with `text`."""
    keyed: dict[str, str] = {}
    paragraph: list[str] = []
    paragraph_done = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or _VERSION.match(line):
            paragraph_done = paragraph_done or bool(paragraph)
            continue
        if not line.startswith("#"):
            break  # the first line of code ends the opening comment
        comment = line.lstrip("#").strip()
        match = _KEY.fullmatch(comment)
        if match:
            keyed.setdefault(match.group(1).lower(), " ".join(match.group(2).split()))
        elif not comment:
            paragraph_done = paragraph_done or bool(paragraph)
        elif not paragraph_done:
            paragraph.append(comment)
    return About(keyed.get("description") or " ".join(" ".join(paragraph).split()), keyed.get("sample input", ""))


def read_about(path: Path) -> About:
    """`about` of the file at `path`; an empty About when it cannot be read."""
    try:
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return About()
    return about(head.decode("utf-8", "replace"))
