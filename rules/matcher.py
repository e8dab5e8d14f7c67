"""Rule patterns: what an activity's text must contain for a rule to apply.

A plain pattern matches case-insensitively with `_` and `-` counting as spaces (so "delete
file" matches the tool `delete_file` and the reason `breaking_change` matches "breaking
change"); a `re:` prefix makes it a regular expression, searched case-insensitively in the raw
text. For one simple command of a `run_command` call (rules.shell), a plain pattern also matches
when its words do (`rm -rf` matches `rm -r -f /`): see `rules.shell.words_match`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.escalation.model import Escalation
from rules.shell import match_words, pattern_words, words_match

REGEX_PREFIX = "re:"
_SEPARATORS = re.compile(r"[\s_\-]+")


def normalize(text: str) -> str:
    return _SEPARATORS.sub(" ", text.lower()).strip()


class Pattern:
    """A compiled rule pattern. Raises re.error for a bad regex (the loader reports where)."""

    __slots__ = ("source", "_regex", "_needle", "_words")

    def __init__(self, source: str) -> None:
        self.source = source
        self._words: tuple[str, ...] | None = None
        if source.startswith(REGEX_PREFIX):
            self._regex: re.Pattern[str] | None = re.compile(source[len(REGEX_PREFIX) :], re.IGNORECASE)
            self._needle = ""
        else:
            self._regex = None
            self._needle = normalize(source)
            self._words = pattern_words(source)

    def matches(self, activity: "Activity") -> bool:
        if self._regex is not None:
            return self._regex.search(activity.raw) is not None
        if self._needle in activity.normalized:
            return True
        return self._words is not None and activity.words is not None and words_match(self._words, activity.words)


class Activity:
    """The text a rule is matched against, normalized once for all rules."""

    __slots__ = ("raw", "normalized", "words")

    def __init__(self, raw: str, words: tuple[str, ...] | None = None) -> None:
        self.raw = raw
        self.normalized = normalize(raw)
        self.words = words  # one simple command's words (match_words), for a shell command

    @classmethod
    def of_escalation(cls, escalation: Escalation) -> "Activity":
        return cls(f"{escalation.reason.value} {escalation.question} {escalation.context}")

    @classmethod
    def of_tool(cls, tool: str, args: dict[str, Any]) -> "Activity":
        parts = [tool] + [f"{key}: {_arg_text(value)}" for key, value in args.items()]
        return cls(" ".join(parts))

    @classmethod
    def of_simple_command(cls, tool: str, words: tuple[str, ...]) -> "Activity":
        """One simple command of a shell command, as text (quotes removed) and as words."""
        return cls(f"{tool} command: {' '.join(words)}", match_words(words))


def _arg_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)
