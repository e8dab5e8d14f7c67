"""An ACP agent's tokens count in the run's budget (rules `budgets:`) as an ADK agent's do: what
its `usage_update`s say (the tokens in its context at the turn's end), or the reply's `usage`
when it gives one; past warnAt the next turn asks (cost_warning), at 100 % the run stops."""

from __future__ import annotations

import json
from pathlib import Path

from engine.kernel.model import Response, ResponseType
from engine.runtime.run_status import RunStatus
from tests.acp.conftest import agent_command, events, logs, raised
from tests.acp.test_acp_cli import _cli, _pending
from tests.cli_here import escalate_here

BUDGET = "escalationRules:\n  global: []\n  budgets:\n    default: {tokens: 1000, warnAt: 0.5}\n"


def three_calls(command: str) -> str:
    return f'''
model main = acp "{command}"
prompt p: """You help."""
agent main:
    instruction p
flow main:
    $a = run agent main $input
    $b = run agent main $a
    $c = run agent main $b
    return $c
'''


async def test_usage_updates_count_and_a_warning_answered_stop_stops_the_run(acp):
    engine = acp.engine(rules=BUDGET)
    command = acp.script([
        [{"usage": [100, 200000, None]}, {"usage": [600, 200000, 0.25]}, {"say": "one"}],
        [{"say": "never"}],
    ])
    handle = acp.start_sr(engine, three_calls(command))
    pending = await raised(engine, 300)
    esc = pending.escalation
    assert esc.reason.value == "cost_warning" and esc.agent == "main"
    assert esc.question.startswith("Token budget almost used up: 600 of 1,000 tokens (60 %)")
    engine.broker.answer(esc.id, Response(ResponseType.OPTION, selected_option="stop"))
    assert await handle.wait() is RunStatus.STOPPED
    assert "token budget: stopped" in handle.error
    assert handle.tokens == 600  # the turn's last `used`, not the sum of its updates
    assert len([t for t in acp.trace() if t["event"] == "prompt"]) == 1  # the second turn never went out
    assert "main: usage: 600 tokens counted for this turn (600 of 200,000 in its context); session cost 0.25 USD" in logs(handle)


async def test_the_replys_usage_counts_and_continuing_tells_the_agent_then_100_percent_stops(acp):
    engine = acp.engine(rules=BUDGET, answers="- {responseType: option, selectedOption: continue}\n")
    command = acp.script([
        [{"usage": [50, 1000, None]}, {"turn_usage": 700}, {"say": "one"}],
        [{"turn_usage": 400}, {"say": "two"}],
        [{"say": "never"}],
    ])
    handle = acp.start_sr(engine, three_calls(command))
    assert await handle.wait() is RunStatus.STOPPED
    assert handle.error == "token budget used up: 1,100 of 1,000 tokens (budgets.default in the rules)"
    sent = [t["text"] for t in acp.trace() if t["event"] == "prompt"]
    assert len(sent) == 2
    assert sent[1].startswith("Token budget: 700 of 1,000 tokens used so far") and "Chosen option: continue" in sent[1]
    assert [e["reason"] for e in events(handle, "human_escalation")] == ["cost_warning"]


def test_a_resumed_run_counts_the_recorded_turns_tokens_again(tmp_path: Path) -> None:
    """The turn's tokens are recorded with its reply: a run continued in another process counts
    them on replay, so the budget stops it before the next prompt (without them it would go on)."""
    ask = ('{"escalation": true, "reason": "architecture_decision", "question": "JWT or sessions?", '
           '"options": [{"id": "jwt", "label": "Use JWT"}, {"id": "keep", "label": "Keep sessions"}]}')
    (tmp_path / ".escalate").mkdir()
    (tmp_path / ".escalate" / "rules.yaml").write_text(
        "escalationRules:\n  global: []\n  budgets:\n    default: {tokens: 1000, warnAt: 1}\n")
    db = f"sqlite:///{tmp_path / 'e.db'}"
    trace = tmp_path / "trace.jsonl"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"trace": str(trace), "state": str(tmp_path / "state"), "turns": [
        [{"usage": [1500, 200000, None]}, {"say": ask}], [{"say": "never"}]]}))
    first = _cli("run", "--agent", agent_command(script), "--input", "fix the login", "--db", db, cwd=tmp_path)
    assert first.returncode == 4, first.stderr  # waiting for the agent's question
    pending = _pending(tmp_path, db)
    assert escalate_here("answer", pending["id"], "--option", "keep", "--db", db, cwd=tmp_path).returncode == 0  # read here
    (tmp_path / "a.yaml").write_text("- {responseType: option, selectedOption: stop}\n")
    resumed = _cli("resume", pending["id"].rsplit(".", 1)[0], "--answers", str(tmp_path / "a.yaml"), "--db", db,
                   cwd=tmp_path)
    assert resumed.returncode == 3, resumed.stderr
    assert "token budget: stopped by" in resumed.stderr and "1,500 of 1,000 tokens" in resumed.stderr
    prompts = [line for line in trace.read_text().splitlines() if '"event": "prompt"' in line]
    assert len(prompts) == 1
