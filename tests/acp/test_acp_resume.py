"""A durable ACP run continued in another process: the agent is started again and loads its
session when it can, else gets a new session with the recorded conversation summarised."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.acp.conftest import agent_command
from tests.acp.test_acp_cli import _cli, _pending
from tests.cli_here import escalate_here

ASK = ('{"escalation": true, "reason": "architecture_decision", "question": "JWT or sessions?", '
       '"options": [{"id": "jwt", "label": "Use JWT"}, {"id": "keep", "label": "Keep sessions"}]}')


@pytest.mark.parametrize("can_load", [True, False])
def test_a_resumed_run_loads_the_session_or_summarises_it(tmp_path: Path, can_load: bool) -> None:
    db = f"sqlite:///{tmp_path / 'e.db'}"
    trace = tmp_path / "trace.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"trace": str(trace), "state": str(tmp_path / "state"), "load_session": can_load,
                                  "turns": [[{"say": f"I looked at auth.py. {ASK}"}], [{"say": "kept the sessions"}]]}))
    first = _cli("run", "--agent", agent_command(script), "--input", "fix the login", "--db", db, cwd=tmp_path)
    assert first.returncode == 4, first.stderr  # headless, nobody to answer: left waiting in the database
    pending = _pending(tmp_path, db)
    assert escalate_here("answer", pending["id"], "--option", "keep", "--db", db, cwd=tmp_path).returncode == 0  # read here
    run_id = pending["id"].rsplit(".", 1)[0]
    resumed = _cli("resume", run_id, "--db", db, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "kept the sessions"
    seen = [json.loads(line) for line in trace.read_text().splitlines()]
    sessions = [t for t in seen if t["event"] in ("new_session", "load_session")]
    prompts = [t["text"] for t in seen if t["event"] == "prompt"]
    assert len(prompts) == 2  # the first turn was not asked again
    assert "Chosen option: keep - Keep sessions." in prompts[1]
    if can_load:
        assert [t["event"] for t in sessions] == ["new_session", "load_session"]
        assert sessions[1]["session"] == f"s-{sessions[0]['pid']}"
        assert "loaded its session" in resumed.stderr
        assert "Earlier in this task" not in prompts[1]
    else:
        assert [t["event"] for t in sessions] == ["new_session", "new_session"]
        assert "cannot load its session" in resumed.stderr
        assert "Earlier in this task" in prompts[1] and "I looked at auth.py." in prompts[1]
        assert "fix the login" in prompts[1]
        assert prompts[1].startswith("Work in the current folder")  # the new session is told its instruction
        assert "## Asking a human" in prompts[1].split("## Earlier in this task")[0]  # and the protocol note
