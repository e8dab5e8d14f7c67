"""End to end: a decision raised in the real console asks the terminal for a desktop
notification (OSC 9, or OSC 777 where the terminal speaks it), in a real pseudo-terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.demo import demo_dir
from tests.e2e.pty_console import PtyConsole
from tui.desktop_notify import desktop_notification

pytestmark = pytest.mark.slow

EXPECTED = {
    "osc9": b"\x1b]9;DECISION REQUIRED [test-fix]: test_failure: test_refresh_token fails",
    "osc777": b"\x1b]777;notify;DECISION REQUIRED [test-fix];test_failure: test_refresh_token fails",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["osc9", "osc777", "off"])
def test_a_raised_decision_asks_the_terminal_for_a_notification(tmp_path: Path, monkeypatch, kind: str) -> None:
    monkeypatch.setenv("ESCALATE_NOTIFY", kind)
    monkeypatch.delenv("TMUX", raising=False)
    console = PtyConsole(tmp_path, str(demo_dir() / "test-fix.sr"), "--run", "--input", "fix the tests")
    try:
        console.wait_for(b"DECISION REQUIRED")
        console.wait_for(b"Custom response")
        console.type("q")
        console.wait_for(b"Quit? y/n")
        console.type("y")
        assert console.exit_code() == 0
    finally:
        console.close()
    out = bytes(console.output)
    for name, sequence in EXPECTED.items():
        assert (sequence in out) == (name == kind), name


def test_the_sequence_is_chosen_for_the_terminal_and_cannot_be_broken_out_of() -> None:
    assert desktop_notification("T", "b", {"TERM": "xterm-256color"}).startswith("\x1b]9;T: b")
    assert desktop_notification("T", "b", {"TERM": "foot"}).startswith("\x1b]777;notify;T;b")
    assert desktop_notification("T", "b", {"VTE_VERSION": "7600"}).startswith("\x1b]777;")
    assert desktop_notification("T", "b", {"ESCALATE_NOTIFY": "off"}) == ""
    wrapped = desktop_notification("T", "b", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;T: b\x07\x1b\\"
    hostile = desktop_notification("evil\x1b]52;c;cHdu\x07;x", "q\x9b2J\n", {"TERM": "rxvt-unicode"})
    body = hostile[len("\x1b]777;notify;"):-1]
    assert "\x1b" not in body and "\x07" not in body and "\x9b" not in body and "\n" not in body
    assert body.count(";") == 1  # the title cannot add a field
