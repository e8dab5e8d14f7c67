"""Origin forms that now compile also run: an agent that uses itself (bounded), guardrails the
origin names but we do not have (never trigger, said once), guardrails a user registers, and a
model block's base_url reaching the model spec. Real ADK runners, scripted model."""

from __future__ import annotations

from pathlib import Path

from engine.lang.compiler import compile_source, workflow_class
from engine.runtime.callbacks import MAX_SELF_USE
from engine.runtime.engine import RunStatus
from engine.flow.guardrails import register_guardrail, unregister_guardrail
from tests.runtime.conftest import events


def compiled(source: str) -> type:
    result = compile_source(source, Path("/tmp/escalate-tests/origin_forms.sr"))
    assert result.ok, result.diagnostics
    return workflow_class(result)


CHUNKER = '''prompt split: """Split the diff; call diff_chunker on a part that is still too large."""
agent diff_chunker:
    instruction split
    use diff_chunker
flow main:
    return run agent diff_chunker with $input
'''


async def test_an_agent_that_uses_itself_recurses_and_stops_at_the_bound(harness) -> None:
    calls = "".join("    - tool: diff_chunker\n      args: {request: 'a smaller part'}\n" for _ in range(MAX_SELF_USE + 1))
    script = ("agents:\n  diff_chunker:\n" + calls
              + "    - text: 'deepest part'\n      when: 'recursion stops here'\n"
              + "    - 'chunks merged'\n" * MAX_SELF_USE)
    handle = await harness.run(compiled(CHUNKER), script, input="a big diff")
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "chunks merged"
    assert [e["agent"] for e in events(handle, "agent_call")] == ["diff_chunker"] * (MAX_SELF_USE + 1)
    warnings = [e["message"] for e in events(handle, "log") if e.get("level") == "warning"]
    assert warnings == [f"agent 'diff_chunker' uses itself more than {MAX_SELF_USE} levels deep: "
                        "the recursion stops here; answer with what you have"]


GUARDED = '''prompt p: """You answer."""
agent worker:
    instruction p
on output do
    block if mcp_guard
    warn if cognitive_drift
    mask shouting
    block if no_secrets_word
end
flow main:
    $first = run agent worker with $input
    return run agent worker with $first
'''


async def test_unknown_guardrails_never_trigger_and_are_said_once(harness) -> None:
    result = compile_source(GUARDED, Path("/tmp/escalate-tests/guarded.sr"))
    assert result.ok and {d.code for d in result.diagnostics} == {"W0004"}
    handle = await harness.run(workflow_class(result), "agents:\n  worker: ['fine SECRET text', 'again']\n")
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "again"  # two turns through the handler, each guardrail told once
    said = [e["message"] for e in events(handle, "log") if "is not available here" in e.get("message", "")]
    assert [m.split("'")[1] for m in said] == ["mcp_guard", "cognitive_drift", "shouting", "no_secrets_word"]


async def test_registered_guardrails_mask_and_block(harness) -> None:
    register_guardrail("shouting", lambda text: text.lower())
    register_guardrail("no_secrets_word", lambda text: "secret" in text.lower())
    try:
        result = compile_source(GUARDED, Path("/tmp/escalate-tests/guarded2.sr"))
        assert sorted(d.message.split("'")[1] for d in result.diagnostics) == ["cognitive_drift", "mcp_guard"]
        masked = await harness.run(workflow_class(result), "agents:\n  worker: ['ALL CAPS', 'MORE']\n")
        assert masked.status is RunStatus.DONE and masked.result == "more", masked.error
        blocked = await harness.run(workflow_class(result), "agents:\n  worker: ['the SECRET plan', 'x']\n")
        assert blocked.status is RunStatus.FAILED and "blocked" in blocked.error
    finally:
        unregister_guardrail("shouting")
        unregister_guardrail("no_secrets_word")


def test_model_block_base_url_reaches_the_model_spec() -> None:
    cls = compiled('model local:\n    provider: openai\n    name: qwen\n    base_url: "http://127.0.0.1:8000/v1"\n'
                   'model bare:\n    provider: openai\n')
    assert cls.MODELS["local"].base_url == "http://127.0.0.1:8000/v1"
    assert cls.MODELS["bare"].model_id is None and cls.MODELS["bare"].base_url is None
