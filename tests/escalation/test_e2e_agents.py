"""Seed 002 through a real run: an approved hand-off, and the loop back denied."""

from engine.runtime.engine import RunStatus
from e2e_support import Harness

SOURCE = """\
streetrace v1

model main = anthropic/claude-sonnet-4

prompt locator_instructions: \"\"\"You locate code.\"\"\"
prompt analyzer_instructions: \"\"\"You analyze code.\"\"\"

agent locator:
    instruction locator_instructions

agent analyzer:
    instruction analyzer_instructions

flow main:
    $out = run agent locator $input
    return $out
"""

SCRIPT = """\
agents:
  locator:
    - tool: escalate_to_agent
      args: {reason: "need to analyze the structure", task: "analyze auth.ts"}
    - text: "locator: analyzer answered after its loop was refused"
      when: "analysis done without locator"
    - "locator: unexpected"
  analyzer:
    - tool: escalate_to_agent
      args: {reason: "need files", task: "find callers", suggested_target: locator}
    - text: "analysis done without locator"
      when: "escalation loop"
    - "analyzer: unexpected"
"""

RULES = """\
policy:
  paths: {locator: [analyzer], analyzer: [locator]}
  fallbacks: {analyzer: [locator], locator: [analyzer, helper]}
  maxDepth: 3
  loopWindow: 300
  targetHints: {analyze: analyzer}
"""


async def test_hand_off_approved_and_loop_back_denied(tmp_path) -> None:
    h = Harness(tmp_path, SOURCE, SCRIPT, RULES)
    handle = h.start()
    assert await h.finish(handle) is RunStatus.DONE, handle.error
    assert handle.result == "locator: analyzer answered after its loop was refused"
    hops = h.events(handle, "agent_escalation")
    assert [(e["source"], e["target"], e["approved"]) for e in hops] == [
        ("locator", "analyzer", True),  # emitted when approved, before the analyzer runs
        ("analyzer", "locator", False),
    ]
    denied = next(e for e in hops if not e["approved"])
    assert "loop" in denied["reason"] and denied["fallbacks"] == ["helper"]
    history = h.engine.agent_policy.history
    assert history.success_rate("locator", None, h.clock.now()) == 1.0
    assert history.success_rate("analyzer", None, h.clock.now()) == 0.0
