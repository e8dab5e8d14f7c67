"""`escalate run` on a demo file without --script answers from `<stem>.yaml` beside it, as the
console does, says so on stderr, and the demo's replies follow the decision taken."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.demo import demo_dir

TEST_FIX = demo_dir() / "test-fix.sr"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A bare environment (no key, no configuration); the session's cache folder kept, so that
    # each process does not make the grammar's analysis again (tests/conftest.py).
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]}
    return subprocess.run([sys.executable, "-m", "engine", "run", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)


def _answers(tmp_path: Path, text: str) -> str:
    path = tmp_path / "answers.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "answers, reply",
    [
        ("- responseType: skip\n", "Skipped as you said: nothing changed, test_refresh_token still fails."),
        ("- responseType: agent_decide\n", "You left it to me: I fixed the clock source"),
        ("- responseType: option\n  selectedOption: relax\n", "Relaxed: expiry allows 5 s of skew"),
        (None, "Nobody answered, so I chose: fix the clock source"),  # the timeout default, at once headless
    ],
)
def test_the_demo_reply_follows_the_decision(tmp_path: Path, answers: str | None, reply: str) -> None:
    extra = ["--answers", _answers(tmp_path, answers)] if answers else []
    done = _run(tmp_path, str(TEST_FIX), "--input", "fix the tests", *extra)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(reply)
    assert f"models: scripted replies from {demo_dir() / 'test-fix.yaml'} (offline)" in done.stderr


def test_an_explicit_script_wins_and_real_models_are_named(tmp_path: Path) -> None:
    flow = tmp_path / "ask.sr"
    flow.write_text('streetrace v1\nmodel main = anthropic/claude-sonnet-4\nagent helper:\n    instruction "help"\n'
                    "flow main:\n    return run agent helper $input\n")
    (tmp_path / "ask.yaml").write_text('agents:\n  helper: ["from beside"]\n')
    (tmp_path / "other.yaml").write_text('agents:\n  helper: ["from --script"]\n')
    assert _run(tmp_path, str(flow), "--script", "other.yaml").stdout == "from --script\n"
    assert _run(tmp_path, str(flow)).stdout == "from beside\n"
    (tmp_path / "ask.yaml").unlink()
    done = _run(tmp_path, str(flow))
    assert "models: main = anthropic/claude-sonnet-4" in done.stderr
