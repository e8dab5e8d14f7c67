"""An ACP agent's reply means what an ADK agent's means: the prompt's `expecting` schema (one
corrective prompt, then the error), `escalate if` with the flow's `on escalate`, output handlers,
and `history` (the messages its session does not already hold). Real pipes, scripted agent."""

from __future__ import annotations

from engine.runtime.run_status import RunStatus
from tests.acp.conftest import events


def workflow(command: str, prompt_extra: str, flow: str, agent_extra: str = "", top: str = "") -> str:
    return f'''
model coder = acp "{command}"
schema Fix:
    file: string
    done: bool
{top}
prompt coding using model "coder"{prompt_extra}
agent fix:
    instruction coding
    {agent_extra}
flow main:
    {flow}
'''


def prompts(acp) -> list[str]:
    return [t["text"] for t in acp.trace() if t["event"] == "prompt"]


async def test_expecting_corrects_once_then_gives_the_value(acp):
    engine = acp.engine()
    command = acp.script([[{"say": "sure, I fixed it"}], [{"say": '{"file": "a.py", "done": true}'}]])
    source = workflow(command, ' expecting Fix: """Fix it."""', "$r = run agent fix $input\n    return $r.file")
    handle = acp.start_sr(engine, source)
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result == "a.py"  # the parsed value: `$r.file` reads it
    second = prompts(acp)[1]
    assert second.startswith("Your reply did not match the expected format") and '"file"' in second


async def test_expecting_fails_the_call_after_a_second_mismatch(acp):
    engine = acp.engine()
    command = acp.script([[{"say": "no"}], [{"say": '{"file": 3}'}]])
    source = workflow(command, ' expecting Fix: """Fix it."""', "$r = run agent fix $input\n    return $r")
    handle = acp.start_sr(engine, source)
    assert await handle.wait() is RunStatus.FAILED
    assert "agent 'fix': reply does not match Fix" in handle.error


async def test_escalate_if_takes_the_flows_on_escalate_inside_a_loop(acp):
    engine = acp.engine()
    command = acp.script([[{"say": "step 1"}], [{"say": "DRIFTING now"}], [{"say": "never asked"}]])
    flow = '''$cur = $input
    loop max 3 do
        $cur = run agent fix $cur, on escalate return $cur
    end
    return "finished"'''
    source = workflow(command, ': """Go on."""\n    escalate if contains "DRIFTING"', flow)
    handle = acp.start_sr(engine, source, input="start")
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result == "step 1"  # the value before the escalating call
    assert len(prompts(acp)) == 2
    (said,) = events(handle, "escalation")
    assert said["agent_name"] == "fix" and said["result"] == "DRIFTING now"


async def test_output_handlers_mask_and_retry_its_reply(acp):
    engine = acp.engine()
    command = acp.script([[{"say": "TODO later"}], [{"say": "mail bob@example.com"}]])
    handlers = '''on output do
        retry with "finish it" if $output contains "TODO"
        mask email
    end'''
    source = workflow(command, ': """Go."""', "$r = run agent fix $input\n    return $r", agent_extra=handlers)
    handle = acp.start_sr(engine, source)
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert prompts(acp)[1] == "finish it"
    assert "bob@example.com" not in handle.result and handle.result.startswith("mail ")


async def test_history_gives_the_session_only_what_it_does_not_hold(acp):
    engine = acp.engine()
    command = acp.script([[{"say": "first reply"}], [{"say": "second reply"}]])
    flow = '''$h = ["we use tabs", {role: "assistant", content: "noted: tabs"}]
    $a = run agent fix "one" history $h
    push $a as assistant to $h
    push "and spaces in yaml" to $h
    $b = run agent fix "two" history $h
    return $b'''
    handle = acp.start_sr(engine, workflow(command, ': """Go."""', flow))
    assert await handle.wait() is RunStatus.DONE, handle.error
    first, second = prompts(acp)
    assert "## Earlier messages of this conversation" in first
    assert "### User\nwe use tabs" in first and "### You\nnoted: tabs" in first and first.endswith("## Message\none")
    # its own reply ("first reply") is in its session already: only the new message is given
    assert second == ("## Earlier messages of this conversation\n\n### User\nand spaces in yaml\n\n## Message\ntwo")


async def test_a_history_policy_compacts_before_the_session_is_given_it(acp):
    engine = acp.engine()
    command = acp.script([[{"say": "ok"}]])
    top = "policy short:\n    strategy: truncate\n    preserve: [last 1 messages]\n"
    flow = '''$h = ["old one", "old two", "latest"]
    $a = run agent fix "go" history $h
    return $a'''
    handle = acp.start_sr(engine, workflow(command, ': """Go."""', flow, agent_extra="history short", top=top))
    assert await handle.wait() is RunStatus.DONE, handle.error
    (first,) = prompts(acp)
    assert "### User\nlatest" in first and "old one" not in first and "old two" not in first


async def test_a_handler_that_runs_the_same_agent_goes_on_in_its_session(acp):
    engine = acp.engine()
    command = acp.script([[{"say": "the fix"}], [{"say": "checked"}]])
    handler = '''after output do
        $note = run agent fix "check it"
        log $note
    end'''
    source = workflow(command, ': """Go."""', "$r = run agent fix $input\n    return $r", agent_extra=handler)
    handle = acp.start_sr(engine, source)
    assert await handle.wait() is RunStatus.DONE, handle.error  # not a wait for its own call's turn
    assert handle.result == "the fix"
    assert prompts(acp)[1] == "check it"
