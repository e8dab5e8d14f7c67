"""End to end: the real `escalate` command in a real terminal (tmux), answered with a key.

Needs tmux (`.ci/run` installs it). Each test starts its own tmux server socket, so nothing is
shared with the user's tmux.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.demo import demo_dir

# .ci/run installs tmux: without it these tests fail rather than skip.
pytestmark = pytest.mark.slow

ESCALATE = str(Path(sys.executable).with_name("escalate"))


class Terminal:
    """One tmux session running one command, on a private socket."""

    def __init__(self, tmp: Path, command: str, size: tuple[int, int] = (120, 40)) -> None:
        self.socket = str(tmp / "tmux.sock")
        self.rc = tmp / "rc"
        script = f"cd {shlex.quote(str(tmp))} && {command}; echo $? > {shlex.quote(str(self.rc))}"
        self._tmux("new-session", "-d", "-s", "e2e", "-x", str(size[0]), "-y", str(size[1]), script)

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=10)
        return done.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "e2e")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "e2e", *keys)

    def wait_for(self, text: str, timeout: float = 120.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; screen:\n{self.screen()}")

    def wait_gone(self, text: str, timeout: float = 120.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            screen = self.screen()
            if text not in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never went; screen:\n{self.screen()}")

    def exit_code(self, timeout: float = 60.0) -> int:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.rc.exists() and self.rc.read_text().strip():
                return int(self.rc.read_text())
            time.sleep(0.1)
        raise AssertionError("the command did not exit")

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def tmp(tmp_path: Path):
    yield tmp_path


def test_console_run_answer_with_a_key_and_see_the_reply(tmp: Path) -> None:
    workflow = demo_dir() / "auth-refactor.sr"
    rules = demo_dir() / "rules.yaml"
    term = Terminal(tmp, f"{ESCALATE} console {workflow} --rules {rules} --run --input 'plan the change'")
    try:
        term.wait_for("DECISION REQUIRED [auth-refactor]")
        screen = term.wait_for("[2] No, keep sessions")
        assert "Reason: architecture_decision" in screen
        term.keys("2")
        term.wait_for("Plan: keep server sessions")  # the agent's reply, in the event log
        term.wait_for("done")
        term.keys("q")
        assert term.exit_code() == 0
    finally:
        term.close()


def test_bare_escalate_opens_the_demo_and_starts_from_the_dialog(tmp: Path) -> None:
    term = Terminal(tmp, ESCALATE)
    try:
        term.wait_for("test-fix")  # the demo workspace's workflows
        term.wait_for("Asks you")  # compiled: each workflow described (its header comment)
        term.keys("Enter")  # the first workflow: auth-refactor -> start dialog
        term.wait_for("Start auth-refactor")
        term.keys("go", "Enter")
        term.wait_for("DECISION REQUIRED [auth-refactor]")
        term.keys("Enter")  # the recommended option
        term.wait_for("Plan: move auth to JWT")
        term.keys("q")
        assert term.exit_code() == 0
    finally:
        term.close()


def test_teach_a_rule_edit_an_approval_and_batch_approve(tmp: Path) -> None:
    """A rule taught from one decision settles a second waiting one; the rules screen removes
    it; an approval with edited arguments runs the tool with them; a batch approves two."""
    from tests.decide.console_support import workspace

    sr, rules, _ws = workspace(tmp)
    term = Terminal(tmp, f"{ESCALATE} console {sr.name} --rules {rules.name} --run --input go")
    try:
        term.wait_for("DECISION REQUIRED [deploy]")
        term.keys("s")
        term.wait_for("Start deploy")
        term.keys("Enter")
        term.wait_for("2 decisions waiting")
        term.keys("d", "a")  # always allow, exactly this call in this task
        term.wait_for("Always allow")
        term.keys("Enter")
        term.wait_for("Rule saved")
        assert "2 waiting requests settled by it" in term.wait_for("settled")
        assert "taught:" in rules.read_text() and "# keep this comment" in rules.read_text()
        assert _appears(tmp / "RELEASED.txt").read_text() == "v1.4.2"

        term.keys("r")  # the rules screen: the taught rule, matched twice, removed with x
        screen = term.wait_for("taught rules go to rules.yaml")
        assert "rules.yaml:7" in screen and "allow" in screen
        term.keys("x")
        term.wait_for("Rule removed")
        assert "taught:" not in rules.read_text()
        term.keys("Escape")
        term.wait_for("Workflows")  # back on the main screen (an Escape and a key at once read as alt+key)

        term.keys("s")
        term.wait_for("Start deploy")
        term.keys("Enter")
        term.wait_for("DECISION REQUIRED [deploy]")
        term.keys("d", "e")  # edit, then approve
        term.wait_for("Edit, then approve: write_file")
        term.keys(*["C-k"] * 8)  # clear the JSON, line by line (ctrl+k: to the end of the line, then the line)
        term.keys('{"path": "STAGED.txt", "content": "staged"}')
        term.wait_for("edited; the rules")
        term.keys("C-s")
        assert _appears(tmp / "STAGED.txt").read_text() == "staged"

        for _ in range(2):
            term.keys("s")
            term.wait_for("Start deploy")
            term.keys("Enter")
            time.sleep(0.3)
        term.wait_for("2 decisions waiting")
        term.keys("d", "b")  # batch: both selected
        term.wait_for("Batch: 2 waiting, tool write_file")
        term.keys("a")
        term.wait_for("2 approved")
        deadline = time.monotonic() + 120  # a hang guard
        while _active_runs(tmp) and time.monotonic() < deadline:  # the approved runs finish
            time.sleep(0.2)
        assert not _active_runs(tmp)
        term.keys("q")
        assert term.exit_code() == 0
    finally:
        term.close()


def _appears(path: Path, timeout: float = 120.0) -> Path:
    end = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < end:
        time.sleep(0.1)
    return path


def _active_runs(cwd: Path) -> list:
    import json

    listed = subprocess.run([ESCALATE, "runs", "--format", "json"], cwd=cwd, capture_output=True, text=True, timeout=60)
    return json.loads(listed.stdout)


def test_at_80x24_escape_sets_the_decision_aside_and_quitting_asks_first(tmp: Path) -> None:
    workflow = demo_dir() / "test-fix.sr"
    term = Terminal(tmp, f"{ESCALATE} console {workflow} --run --input 'fix the tests'", size=(80, 24))
    try:
        term.wait_for("DECISION REQUIRED [test-fix]")
        term.wait_for("[5] Custom response...")
        screen = term.wait_for("i Instructions")  # once the pane has the keyboard
        assert "q Quit" in screen  # the key bar keeps its labels
        term.keys("Escape")  # set aside: the decision still waits, the header says for how long
        screen = term.wait_gone("DECISION REQUIRED")
        assert "1 decision waiting" in screen and "oldest" in screen
        term.keys("q")
        screen = term.wait_for("Quit? y/n")
        assert "1 decision waiting" in screen and "continue next time" in screen
        term.keys("n")  # stay
        term.wait_gone("Quit? y/n")
        term.keys("d")  # the decision comes back
        term.wait_for("DECISION REQUIRED [test-fix]")
        term.keys("q")
        term.wait_for("Quit? y/n")
        term.keys("y")
        assert term.exit_code() == 0
    finally:
        term.close()
    # Nothing was lost: the run waits in the database for next time.
    listed = subprocess.run([ESCALATE, "runs"], cwd=tmp, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert "test-fix" in listed.stdout and "test_failure" in listed.stdout
