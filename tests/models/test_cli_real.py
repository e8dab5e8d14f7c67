"""`escalate run` end to end, as a user runs it: a subprocess, a `.sr` file whose model block
points `base_url` at the local server, an answers file, the events file, the exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_here import escalate_here
from tests.models.llm_server import ModelServer, Turn

pytestmark = pytest.mark.slow

WORKFLOW = """
model main:
    provider: openai
    name: gpt-test
    base_url: "{url}"
retry twice = 2 times, exponential backoff
tool fs = builtin streetrace.fs
prompt p: \"\"\"You write files.\"\"\"
agent main:
    instruction p
    tools fs
    retry twice
"""

ESCALATION = ('Before I go on:\n{"escalation": true, "reason": "architecture_decision", "question": "JWT?", '
              '"options": [{"id": "opt1", "label": "Yes"}, {"id": "opt2", "label": "No"}]}\nThat is all.')


def escalate(tmp: Path, *args: str, stream: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, OPENAI_API_KEY="sk-test-not-a-real-key", ESCALATE_STREAM="1" if stream else "",
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("stream", [False, True])
def test_run_against_a_local_server(tmp_path: Path, stream: bool) -> None:
    text = ESCALATION
    with ModelServer() as server:
        server.push(
            Turn(status=429, headers={"Retry-After": "1"}),
            Turn(tool_calls=[("write_file", {"path": "a.txt", "content": "hi"})], usage=(100, 10)),
            Turn(status=500),
            Turn(text=text, chunks=[text[:25], text[25:61], text[61:]], usage=(200, 20)),
            Turn(text="all done", usage=(300, 3)),
        )
        (tmp_path / "wf.sr").write_text(WORKFLOW.format(url=server.url))
        (tmp_path / "a.yaml").write_text("- {responseType: option, selectedOption: opt1}\n")
        done = escalate(tmp_path, "run", "wf.sr", "--answers", "a.yaml", "--events", "e.jsonl", stream=stream)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "all done\n"
        assert "Traceback" not in done.stderr
        assert "rate limited (HTTP 429, retry after 1 s)" in done.stderr
        assert (tmp_path / "a.txt").read_text() == "hi"
        events = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
        assert [e["selectedOption"] for e in events if e["type"] == "decision"] == ["opt1"]
        assert all(bool(r["body"].get("stream")) is stream for r in server.requests)
    listed = escalate_here("runs", "--all", "--format", "json", cwd=tmp_path)  # what it says, not its process
    assert json.loads(listed.stdout)[0]["tokens"] == 633


def test_a_bad_key_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with ModelServer([Turn(status=401)]) as server:
        (tmp_path / "wf.sr").write_text(WORKFLOW.format(url=server.url))
        done = escalate(tmp_path, "run", "wf.sr")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if "401" in ln]
    assert "model 'main' (openai/gpt-test at http://127.0.0.1:" in line and "authentication failed" in line
