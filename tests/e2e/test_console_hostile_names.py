"""End to end: the console on a workflow named with an OSC 52 sequence (and the rest of
tests/hostile_text.py's HOSTILE), in a real pseudo-terminal. None of the hostile sequences is
among the bytes the terminal gets, whatever path they took (lists, log, pane, history, toasts,
the terminal's title), and every byte is UTF-8 (the file's name has a byte that is not)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.pty_console import PtyConsole
from tests.hostile_text import HOSTILE, hostile_workspace

pytestmark = pytest.mark.slow

# The hostile text's parts that escalate itself never writes: OSC 52, clear screen, C1 CSI (in
# UTF-8), the right-to-left override, DEL. (BEL is escalate's too: the bell, the end of OSC 2.)
NEVER = (b"\x1b]52", b"\x1b[2J", b"\xc2\x9b", "\u202e".encode(), b"\x7f")


@pytest.mark.timeout(120)
def test_hostile_names_never_reach_the_terminal_as_sequences(tmp_path: Path) -> None:
    [workflow, _], rules = hostile_workspace(tmp_path)
    console = PtyConsole(tmp_path, str(workflow), "--rules", str(rules), "--run")
    try:
        console.wait_for(b"DECISION REQUIRED")
        console.wait_for("evil␛]52;c;cHduZWQ=␇".encode())  # the task, in the pane's title
        console.wait_for("x␛]52;c;cHduZWQ=␇".encode())  # the hand-off's target, in the log
        console.type("h")
        console.wait_for(b"Agent-to-agent escalations")  # the history screen and its metrics
        console.type("q")
        console.wait_for(b"Quit? y/n")  # a decision is still waiting: the console asks first
        console.type("y")
        assert console.exit_code() == 0
    finally:
        console.close()
    out = bytes(console.output)
    assert [seq for seq in NEVER if seq in out] == []
    out.decode("utf-8")  # raises on a byte that is not UTF-8
