"""Every bundled example runs offline with its script, through real ADK runners."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "engine" / "examples"

EXPECTED = {
    "pingpong": ("3.14", "3.14159"),
    "coordinator": ("my app crashes", "Clear the cache and restart the app; the crash comes from a stale session file."),
    "hierarchical": ("how does ADK pause?", "ADK runs agents in sessions; a long-running tool call pauses the run until its answer arrives."),
    "iterative": ("draft", "Escalate pauses your agents when they need a decision."),
    "combined": ("review src/", json.dumps({"result": "Review round 2: all clean.", "rounds": 2})),
}


def test_every_example_has_a_script() -> None:
    assert {p.stem for p in EXAMPLES.glob("*.sr")} == {p.stem for p in EXAMPLES.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_offline(name: str, capsys, tmp_path) -> None:
    given, expected = EXPECTED[name]
    events = tmp_path / "e.jsonl"
    code = main(
        ["run", str(EXAMPLES / f"{name}.sr"), "--script", str(EXAMPLES / f"{name}.yaml"), "--input", given,
         "--events", str(events), "--workspace", str(tmp_path)]
    )
    out, err = capsys.readouterr()
    assert (code, out) == (0, expected + "\n"), err
    types = [json.loads(line)["type"] for line in events.read_text().splitlines()]
    assert types[0] == "agent_call" and types[-1] == "flow_result"


def test_delegate_reaches_the_specialist_and_escalation_propagates(capsys, tmp_path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(
        "agents:\n  coordinator:\n    - tool: transfer_to_agent\n      args: {agent_name: support}\n"
        "  support:\n    - 'Sorry: NEEDS HUMAN'\n"
    )
    events = tmp_path / "e.jsonl"
    code = main(["run", str(EXAMPLES / "coordinator.sr"), "--script", str(script), "--events", str(events)])
    out, err = capsys.readouterr()
    # support's prompt escalates; it propagates to the `run` statement, whose handler aborts.
    assert (code, out) == (3, ""), err
    [esc] = [json.loads(l) for l in events.read_text().splitlines() if '"escalation"' in l]
    assert esc["agent_name"] == "support" and esc["condition_op"] == "contains"
