"""Text that tries to take over a terminal, for file names, agent names and replies, and the
check that none of it reached one.

Written out here rather than taken from engine/text_safety.py: a test that read the sanitizer's
own table could not catch a hole in it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # writes "pwned" to the terminal's clipboard
# OSC 52, clear screen, a bare BEL, a one-byte CSI (C1), DEL, and a right-to-left override that
# makes "txt.exe" read "exe.txt". No "/" and no NUL: it must fit in a file name.
HOSTILE = f"{OSC52}\x1b[2J\x07\x9b31m\u202etxt.exe\x7f"

# What must never reach a terminal from outside the program: C0 controls except tab and
# newline, DEL, C1 controls, bidi embeddings/overrides/isolates, lone surrogates.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def forbidden_in(text: str) -> list[str]:
    """The forbidden characters in `text`, each once, in order of appearance."""
    return list(dict.fromkeys(FORBIDDEN.findall(text)))


def forbidden_in_bytes(data: bytes) -> list[str]:
    """Bytes written to a terminal (UTF-8; a byte that is not is itself forbidden)."""
    try:
        return forbidden_in(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return [f"not UTF-8 at byte {exc.start}: {data[max(0, exc.start - 20):exc.start + 20]!r}"]


WORKFLOW = 'prompt p: """x"""\nagent a:\n    instruction p\nagent b:\n    instruction p\nflow main:\n    return run agent a "go"\n'


def hostile_workspace(tmp: Path) -> tuple[list[Path], Path]:
    """(workflows, rules): one that runs, one that does not compile, both hostile by name, with
    a byte that is not UTF-8 in it too (\udcff: the byte 0xff, as Python reads the name)."""
    runs = tmp / f"evil{HOSTILE}\udcff.sr"
    runs.write_text(WORKFLOW)
    question = {
        "escalation": True, "reason": "architecture_decision", "question": f"q{HOSTILE}", "context": f"c{HOSTILE}",
        "options": [{"id": f"o{HOSTILE}", "label": f"l{HOSTILE}", "description": f"d{HOSTILE}", "recommended": True}],
    }
    runs.with_suffix(".yaml").write_text(json.dumps({"agents": {"a": [
        {"tool": "escalate_to_agent", "args": {"reason": f"r{HOSTILE}", "task": f"t{HOSTILE}",
                                               "suggested_target": f"x{HOSTILE}"}},
        json.dumps(question),
        "done",
    ]}}))
    broken = tmp / f"broken{HOSTILE}\udcff.sr"
    broken.write_text("flow main:\n    $x = run agent ghost\n")
    rules = tmp / "rules.yaml"
    # `a` may hand off (to b only), and the question's countdown names its recommended option.
    rules.write_text("escalationRules:\n  defaults:\n    architecture_decision: {timeout: 300, onTimeout: recommended}\n"
                     "policy:\n  paths:\n    a: [b]\n")
    return [runs, broken], rules
