"""An ACP agent as a workflow agent, end to end over real pipes: replies, streamed updates,
permission requests answered every way, escalation JSON, cancel, crashes and bad messages."""

from __future__ import annotations

import asyncio
import os

from engine.kernel.model import Origin, ResolvedBy, Response, ResponseType
from engine.runtime.run_status import RunStatus
from tests.acp.conftest import events, logs, raised

ALLOW_ONCE = ["allow-1", "Allow once", "allow_once"]
ALLOW_ALWAYS = ["allow-all", "Always allow", "allow_always"]
REJECT_ONCE = ["no-1", "Reject", "reject_once"]
REJECT_ALWAYS = ["no-all", "Never", "reject_always"]
OPTIONS = [ALLOW_ONCE, ALLOW_ALWAYS, REJECT_ONCE, REJECT_ALWAYS]


def permission(title: str = "npm publish", raw_input: object = None) -> dict:
    return {"permission": {"title": title, "kind": "execute", "raw_input": raw_input or {"command": title},
                           "options": OPTIONS}}


async def test_plain_reply_and_streamed_updates_reach_the_log_as_text(acp):
    engine = acp.engine()
    command = acp.script([[
        {"think": "reading the code"},
        {"tool": {"id": "t1", "title": "Read [red]main.py[/red]", "kind": "read", "status": "in_progress"}},
        {"tool_update": {"id": "t1", "status": "completed"}},
        {"plan": ["look", "fix"]},
        {"say": "Fixed [bold]it[/bold]\x1b[2J\nall good", "chunks": 4},
    ]])
    handle = acp.start(engine, command)
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result == "Fixed [bold]it[/bold]\x1b[2J\nall good"
    lines = logs(handle)
    assert "main: thought: reading the code" in lines
    assert "main: tool: Read [red]main.py[/red] (read) [in_progress]" in lines
    assert "main: tool: t1: completed" in lines
    assert "main: plan: [pending] look; [pending] fix" in lines
    assert "main: all good" in lines
    shown = next(line for line in lines if line.startswith("main: Fixed"))
    assert "[bold]it[/bold]" in shown and "\x1b" not in shown  # as text; the escape made visible
    trace = acp.trace()
    assert {k: trace[0][k] for k in ("event", "fs", "terminal")} == {"event": "initialize", "fs": True, "terminal": True}
    assert trace[1]["event"] == "new_session" and trace[1]["cwd"] == str(acp.workspace.resolve())
    assert trace[2]["event"] == "prompt" and trace[2]["text"].endswith("## Task\ndo the task")
    assert '"escalation": true' in trace[2]["text"]  # seed 004's protocol note


async def test_a_permission_is_a_tool_approval_with_the_agents_own_options(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[permission("npm publish", {"command": "npm publish", "tag": "latest"})]]))
    pending = await raised(engine)
    esc = pending.escalation
    assert esc.origin is Origin.TOOL_APPROVAL and esc.agent == "main"
    assert [(o.id, o.label, o.description) for o in esc.options] == [tuple(o) for o in OPTIONS]
    assert "npm publish" in esc.question and "kind: execute" in esc.context and '"tag": "latest"' in esc.context
    assert pending.extra["tool"] == "npm publish" and pending.extra["args"] == {"command": "npm publish", "tag": "latest"}
    engine.broker.answer(esc.id, Response(ResponseType.OPTION, selected_option="allow-1"))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result.strip() == "outcome: allow-1"
    assert events(handle, "tool_call")[-1]["verdict"] == "confirmed"


async def test_reject_once_is_sent_back_and_the_call_is_denied(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[permission()]]))
    pending = await raised(engine)
    engine.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="no-1"))
    assert await handle.wait() is RunStatus.DONE
    assert handle.result.strip() == "outcome: no-1"
    assert events(handle, "tool_call")[-1]["verdict"] == "denied"


async def test_approve_and_deny_take_the_first_allow_and_reject_option(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[permission("deploy"), permission("drop table")]]))
    first = await raised(engine)
    engine.broker.answer(first.escalation.id, Response(ResponseType.OPTION, selected_option="approve"))
    await asyncio.sleep(0)
    second = await _next_other(engine, first.escalation.id)
    engine.broker.answer(second.escalation.id, Response(ResponseType.OPTION, selected_option="deny"))
    assert await handle.wait() is RunStatus.DONE
    assert [t["outcome"] for t in acp.trace() if t["event"] == "permission"] == ["allow-1", "no-1"]


async def _next_other(engine, previous: str):
    for _ in range(3000):
        pending = [p for p in engine.broker.pending() if p.escalation.id != previous]
        if pending:
            return pending[0]
        await asyncio.sleep(0.01)
    raise AssertionError("no second escalation")


async def test_allow_always_teaches_a_rule_that_answers_the_same_call_next_time(acp):
    engine = acp.engine(rules="escalationRules:\n  global: []\n")
    handle = acp.start(engine, acp.script([[permission("git push"), permission("git push")]]))
    pending = await raised(engine)
    engine.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="allow-all"))
    assert await handle.wait() is RunStatus.DONE, handle.error
    outcomes = [t["outcome"] for t in acp.trace() if t["event"] == "permission"]
    assert outcomes == ["allow-all", "allow-1"]  # the second: the taught rule, no person
    assert "git push" in (acp.tmp / "rules.yaml").read_text()
    assert any("taught a rule" in line for line in logs(handle))
    assert [e["verdict"] for e in events(handle, "tool_call")] == ["confirmed", "allowed"]


async def test_reject_always_teaches_a_deny_rule(acp):
    engine = acp.engine(rules="escalationRules:\n  global: []\n")
    handle = acp.start(engine, acp.script([[permission("rm -rf build"), permission("rm -rf build")]]))
    pending = await raised(engine)
    engine.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="no-all"))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert [t["outcome"] for t in acp.trace() if t["event"] == "permission"] == ["no-all", "no-1"]
    assert "deny" in (acp.tmp / "rules.yaml").read_text()


async def test_rules_decide_on_the_title_and_raw_input_without_a_person(acp):
    engine = acp.engine(rules="""\
        escalationRules:
          global:
            - {pattern: "npm publish", action: deny}
            - {pattern: "git status", action: allow}
        """)
    handle = acp.start(engine, acp.script([[permission("npm publish"), permission("Run", {"command": "git status"})]]))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert [t["outcome"] for t in acp.trace() if t["event"] == "permission"] == ["no-1", "allow-1"]
    assert engine.broker.pending() == []


async def test_a_stop_rule_ends_the_task(acp):
    engine = acp.engine(rules="escalationRules:\n  global:\n    - {pattern: format disk, action: stop}\n")
    handle = acp.start(engine, acp.script([[permission("format disk"), {"say": "never"}]]))
    assert await handle.wait() is RunStatus.STOPPED
    assert "format disk" in handle.error


async def test_nobody_to_answer_a_permission_means_reject(acp):
    engine = acp.engine(answers="[]\n")  # headless, no answer left: fail closed
    handle = acp.start(engine, acp.script([[permission()]]))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result.strip() == "outcome: no-1"
    decision = events(handle, "decision")[-1]
    assert decision["resolvedBy"] == ResolvedBy.TIMEOUT_DEFAULT.value


async def test_an_escalation_json_reply_is_an_escalation_and_its_decision_the_next_prompt(acp):
    engine = acp.engine()
    ask = ('I need a decision. {"escalation": true, "reason": "architecture_decision", "question": "JWT or sessions?", '
           '"options": [{"id": "jwt", "label": "Use JWT"}, {"id": "keep", "label": "Keep sessions"}]}')
    handle = acp.start(engine, acp.script([[{"say": ask}], [{"say": "Done with sessions"}]]))
    pending = await raised(engine)
    assert pending.escalation.origin is Origin.AGENT_TEXT
    assert pending.escalation.question == "JWT or sessions?"
    assert [o.id for o in pending.escalation.options] == ["jwt", "keep"]
    engine.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="keep",
                                                         additional_instructions="one release only"))
    assert await handle.wait() is RunStatus.DONE, handle.error
    assert handle.result == "Done with sessions"
    second = [t for t in acp.trace() if t["event"] == "prompt"][1]["text"]
    assert "Chosen option: keep - Keep sessions." in second and "one release only" in second


async def test_a_cancelled_run_cancels_the_prompt_and_ends_the_agents_group(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[{"say": "working\n"}, {"wait": 60}]]))
    for _ in range(3000):
        if any(line == "main: working" for line in logs(handle)):
            break
        await asyncio.sleep(0.01)
    pid = next(t for t in acp.trace() if t["event"] == "new_session")["pid"]
    handle.cancel()
    assert await handle.wait() is RunStatus.CANCELLED
    assert any(t["event"] == "cancel" for t in acp.trace())  # session/cancel reached the agent
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


async def test_a_crash_mid_prompt_is_one_line_naming_the_agent_and_its_words(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[{"say": "half"}, {"crash": 3, "stderr": "fatal: out of tokens"}]]))
    assert await handle.wait() is RunStatus.FAILED
    assert "ACP agent 'main'" in handle.error and "exited (exit code 3): fatal: out of tokens" in handle.error
    assert "\n" not in handle.error and "Traceback" not in handle.error


async def test_a_malformed_message_is_one_line(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[{"raw": "this is not json {"}, {"wait": 30}]]))
    assert await handle.wait() is RunStatus.FAILED
    assert "ACP agent 'main'" in handle.error and "malformed message (not JSON)" in handle.error


async def test_a_flood_of_output_is_cut_off_with_one_line(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[{"flood": 9 * 1024 * 1024}]]))
    assert await handle.wait() is RunStatus.FAILED
    assert "flooded its output" in handle.error


async def test_a_wrong_protocol_version_is_one_line(acp):
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[{"say": "hi"}]], protocol_version=7))
    assert await handle.wait() is RunStatus.FAILED
    assert "speaks ACP protocol version 7; escalate speaks version 1" in handle.error


async def test_an_agent_that_is_not_installed_is_one_line(acp):
    engine = acp.engine()
    handle = acp.start(engine, "no-such-acp-agent-xyz --acp")
    assert await handle.wait() is RunStatus.FAILED
    assert handle.error == "ACP agent 'main' (no-such-acp-agent-xyz --acp): not installed ('no-such-acp-agent-xyz' is not on PATH)"


async def test_files_and_terminals_stay_in_the_workspace_and_pass_the_rules(acp):
    engine = acp.engine(rules="escalationRules:\n  global:\n    - {pattern: curl, action: deny}\n")
    outside = acp.tmp / "outside.txt"
    handle = acp.start(engine, acp.script([[
        {"write": [str(acp.workspace / "notes.txt"), "hello"]},
        {"read": str(acp.workspace / "notes.txt")},
        {"write": [str(outside), "escaped"]},
        {"write": ["../outside2.txt", "escaped"]},
        {"run": ["echo", ["hi there"]]},
        {"run": ["curl", ["http://127.0.0.1:9/"]]},
        {"run": ["echo from a shell line > shell.txt", []]},  # no arguments: a shell line, as adapters send it
        {"run": ["ls; curl http://127.0.0.1:9/", []]},  # every command of the line is checked
    ]]))
    assert await handle.wait() is RunStatus.DONE, handle.error
    results = {(t["event"], i): t["result"] for i, t in enumerate(acp.trace()) if t["event"] in ("write", "read", "run")}
    values = list(results.values())
    assert values[0] == "written" and (acp.workspace / "notes.txt").read_text() == "hello"
    assert values[1] == "hello"
    assert values[2].startswith("error:") and "outside the workspace" in values[2] and not outside.exists()
    assert values[3].startswith("error:") and not (acp.tmp / "outside2.txt").exists()
    assert values[4] == "exit 0: hi there"
    assert values[5].startswith("error:") and "denied" in values[5]
    assert values[6] == "exit 0: " and (acp.workspace / "shell.txt").read_text() == "from a shell line\n"
    assert values[7].startswith("error:") and "denied" in values[7]
    assert {e["tool"] for e in events(handle, "tool_call")} >= {"write_file", "read_file", "run_command"}

