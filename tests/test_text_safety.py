"""engine/text_safety.visible: exactly the characters a terminal would obey (or could not
write) become signs, one for one; everything else passes untouched."""

from __future__ import annotations

import sys

from engine.text_safety import visible
from tests.hostile_text import HOSTILE, forbidden_in


def test_every_code_point_is_kept_or_shown_as_a_sign_one_for_one() -> None:
    everything = "".join(chr(c) for c in range(sys.maxunicode + 1))
    shown = visible(everything)
    assert len(shown) == len(everything)  # one sign per character: columns and carets stay aligned
    assert forbidden_in(shown) == []
    changed = [c for c, s in zip(everything, shown) if c != s]
    assert changed == forbidden_in(everything)  # nothing else is touched (tab and newline stay)
    assert "\t" not in changed and "\n" not in changed
    assert shown.encode("utf-8")  # lone surrogates are gone: any terminal encoding can write it


def test_signs_read_as_what_they_replace() -> None:
    assert visible(HOSTILE) == "␛]52;c;cHduZWQ=␇␛[2J␇\ufffd31m\ufffdtxt.exe␡"
    assert visible(visible(HOSTILE)) == visible(HOSTILE)
    clean = "agent planner: JWT?\n\tyes"
    assert visible(clean) is clean  # clean text (nearly all of it) is not copied
