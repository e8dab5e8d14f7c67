"""An ACP agent where the language allows an agent: a `use` target and a `delegate` of an ADK
agent (the scripted ADK model calls it), and `parallel` branches; its permission requests still
reach the desk. The scripted ACP agent runs over real pipes."""

from __future__ import annotations

from engine.kernel.model import Origin, Response, ResponseType
from engine.runtime.run_status import RunStatus
from tests.acp.conftest import events, raised

ALLOW = ["allow-1", "Allow once", "allow_once"]
REJECT = ["no-1", "Reject", "reject_once"]


def permission(title: str) -> dict:
    return {"permission": {"title": title, "kind": "execute", "raw_input": {"command": title}, "options": [ALLOW, REJECT]}}


def workflow(command: str, boss: str, flow: str = "$r = run agent boss $input\n    return $r") -> str:
    return f'''
model main = anthropic/claude-sonnet
model coder = acp "{command}"
schema Fix:
    file: string
    done: bool
prompt lead: """You lead."""
prompt coding using model "coder" expecting Fix: """You code. Reply with JSON."""
agent coder_agent:
    instruction coding
    description "writes code"
agent boss:
    instruction lead
    {boss}
flow main:
    {flow}
'''


async def test_a_use_target_answers_as_the_tool_result_and_its_permission_goes_to_the_desk(acp):
    engine = acp.engine()
    command = acp.script([[permission("make test"), {"say": '{"file": "a.py", "done": true}'}]])
    handle = acp.start_sr(engine, workflow(command, "use coder_agent"), script="""
        agents:
          boss:
            - {tool: coder_agent, args: {request: fix a.py}}
            - {text: 'the coder fixed it', when: '"file": "a.py"'}
        """)
    pending = await raised(engine, 300)  # the first ADK run imports ADK: slow on a loaded host
    assert pending.escalation.origin is Origin.TOOL_APPROVAL and pending.escalation.agent == "coder_agent"
    engine.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="allow-1"))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result == "the coder fixed it"  # its reply came back as the tool's result
    prompts = [t["text"] for t in acp.trace() if t["event"] == "prompt"]
    assert len(prompts) == 1 and prompts[0].endswith("## Task\nfix a.py")
    # The schema is checked on its reply: the tool result is the parsed object.
    assert {"agent": "coder_agent", "result": {"file": "a.py", "done": True}} in events(handle, "agent_result")


async def test_a_delegate_answers_for_its_parent_and_its_permission_goes_to_the_desk(acp):
    engine = acp.engine()
    command = acp.script([[permission("git push"), {"echo": True}, {"say": '\n{"file": "b.py", "done": false}'}]])
    handle = acp.start_sr(engine, workflow(command, "delegate coder_agent"), input="fix b.py", script="""
        agents:
          boss:
            - {tool: transfer_to_agent, args: {agent_name: coder_agent}}
        """)
    pending = await raised(engine, 300)
    assert pending.escalation.agent == "coder_agent" and pending.extra["tool"] == "git push"
    engine.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="no-1"))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert [t["outcome"] for t in acp.trace() if t["event"] == "permission"] == ["no-1"]
    assert handle.result.endswith('{"file": "b.py", "done": false}')
    prompts = [t["text"] for t in acp.trace() if t["event"] == "prompt"]
    assert len(prompts) == 1 and prompts[0].startswith("You code. Reply with JSON.")  # its own instruction
    assert "echo: fix b.py" in handle.result  # given the message its parent was given
    assert [e["agent"] for e in events(handle, "agent_call")] == ["boss", "coder_agent"]


async def test_parallel_calls_of_one_agent_queue_in_its_one_session(acp):
    engine = acp.engine()
    command = acp.script([[{"wait": 0.3}, {"echo": True}], [{"echo": True}]])
    flow = '''parallel do
        $a = run agent coder_agent "one"
        $b = run agent coder_agent "two"
    end
    return "${a}|${b}"'''
    handle = acp.start_sr(engine, workflow(command, "use coder_agent", flow).replace(' expecting Fix', ''))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result == "echo: one|echo: two"
    trace = acp.trace()
    assert [t["event"] for t in trace].count("new_session") == 1  # one process, one session
    prompts = [t["text"] for t in trace if t["event"] == "prompt"]
    assert sorted(p.rsplit("\n", 1)[-1] for p in prompts) == ["one", "two"]  # one after the other
    assert prompts[0].startswith("You code.") and prompts[1] in ("one", "two")  # introduced once


async def test_different_acp_agents_run_in_parallel_each_in_its_own_process(acp):
    engine = acp.engine()
    first = acp.script([[{"echo": True}]])
    second = acp.script([[{"echo": True}]])
    source = f'''
model one = acp "{first}"
model two = acp "{second}"
prompt p1 using model "one": """First."""
prompt p2 using model "two": """Second."""
agent a1:
    instruction p1
agent a2:
    instruction p2
flow main:
    parallel do
        $x = run agent a1 "left"
        $y = run agent a2 "right"
    end
    return "${{x}}|${{y}}"
'''
    handle = acp.start_sr(engine, source)
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result == "echo: left|echo: right"
    assert len({t["pid"] for t in acp.trace() if t["event"] == "new_session"}) == 2
