"""Rule patterns: what an activity's text must contain for a rule to apply.

A plain pattern matches case-insensitively with `_` and `-` counting as spaces (so "delete
file" matches the tool `delete_file` and the reason `breaking_change` matches "breaking
change"); a `re:` prefix makes it a regular expression, searched case-insensitively in the raw
text. For one simple command of a `run_command` call (rules.shell), a plain pattern also matches
when its words do (`rm -rf` matches `rm -r -f /`): see `rules.shell.words_match`.

Rule regexes are RE2's (google-re2): matching takes linear time in the text, whatever the
pattern, so a pattern like `(a+)+$` cannot hang a run on a long tool argument. RE2 has no
backreferences or lookaround; such a pattern is refused when the rules are loaded.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import re2

from rules.shell import match_words, pattern_words, words_match

if TYPE_CHECKING:
    from engine.kernel.model import Escalation

REGEX_PREFIX = "re:"
_SEPARATORS = re.compile(r"[\s_\-]+")
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.case_sensitive = False
_RE2_OPTIONS.log_errors = False  # the loader reports the error, with its position


class BadPattern(ValueError):
    """A regex RE2 refuses: why, and where in the pattern (`pos`, when known)."""

    def __init__(self, message: str, pos: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def normalize(text: str) -> str:
    return _SEPARATORS.sub(" ", text.lower()).strip()


class Pattern:
    """A compiled rule pattern. Raises BadPattern for a bad regex (the loader reports where)."""

    __slots__ = ("source", "_regex", "_needle", "_words")

    def __init__(self, source: str) -> None:
        self.source = source
        self._words: tuple[str, ...] | None = None
        if source.startswith(REGEX_PREFIX):
            self._regex: Any = _compile(source[len(REGEX_PREFIX) :])
            self._needle = ""
        else:
            self._regex = None
            self._needle = normalize(source)
            self._words = pattern_words(source)

    # A pattern is its source: rules read from a snapshot equal the same rules parsed.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and other.source == self.source

    def __hash__(self) -> int:
        return hash(self.source)

    def matches(self, activity: "Activity") -> bool:
        if self._regex is not None:
            return self._regex.search(activity.utf8) is not None
        if self._needle in activity.normalized:
            return True
        return self._words is not None and activity.words is not None and words_match(self._words, activity.words)


def _compile(regex: str) -> Any:
    try:
        return re2.compile(regex, _RE2_OPTIONS)
    except re2.error as exc:
        # RE2 says e.g. "invalid perl operator: (?=": the part after ": " is the offending text.
        reason = exc.args[0].decode("utf-8", "replace") if isinstance(exc.args[0], bytes) else str(exc.args[0])
        offending = reason.partition(": ")[2]
        found = regex.find(offending) if offending else -1
        raise BadPattern(reason, found if found >= 0 else None) from None


class Activity:
    """The text a rule is matched against, normalized (and encoded for RE2) once for all rules."""

    __slots__ = ("raw", "normalized", "utf8", "words")

    def __init__(self, raw: str, words: tuple[str, ...] | None = None) -> None:
        self.raw = raw
        self.normalized = normalize(raw)
        # Agent text may hold lone surrogates (JSON "\ud800"): carried through, never a crash.
        self.utf8 = raw.encode("utf-8", "surrogatepass")
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
