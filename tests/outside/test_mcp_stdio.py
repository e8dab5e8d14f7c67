"""`escalate mcp` over stdio, driven by the `mcp` package's own client (a real subprocess):
the tool answered from the shell, progress while it waits, the same `requestId` after a
disconnection, deadlines, and hostile arguments."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest

from engine.durable.askers import withdraw_gone
from engine.durable.database import Database
from tests.workers.conftest import pg_url, postgres_server  # noqa: F401  (fixtures)
from tests.outside.mcp_harness import WAIT, Desk, call, question

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def desk(tmp_path) -> Desk:
    return Desk.make(tmp_path)


async def test_the_tool_is_listed_with_seed_004s_fields(desk) -> None:
    async with desk.stdio() as client:
        (tool,) = (await client.list_tools()).tools
    assert tool.name == "escalate_to_human"
    schema = tool.input_schema
    assert set(schema["properties"]) == {"reason", "question", "context", "options", "allowAgentDecision", "timeout",
                                         "requestId"}
    assert set(schema["properties"]["options"]["items"]["properties"]) == {"id", "label", "description", "recommended"}
    assert schema["required"] == ["reason", "question"] and schema["additionalProperties"] is False
    assert "architecture_decision" in schema["properties"]["reason"]["enum"]


async def test_answered_from_the_shell_with_progress_while_it_waits(desk) -> None:
    async with desk.stdio() as client:
        waiting = call(client, desk, **question(requestId="q-1"))
        (listed,) = await desk.listed()
        assert (listed["question"], listed["options"], listed["recommended"]) == (
            "Use JWT instead of sessions?", ["opt1", "opt2"], "opt1")
        for _ in range(int(WAIT * 10)):  # the call reports progress while nobody answers
            if desk.progress or waiting.done():
                break
            await asyncio.sleep(0.1)
        assert desk.progress and listed["id"] in (desk.progress[0][1] or "")
        assert not waiting.done()
        desk.answer(listed["id"], "--option", "opt2", "--instructions", "Keep the cookie one release")
        result = await asyncio.wait_for(waiting, WAIT)
    assert not result.is_error
    answer = result.structured_content
    assert answer == json.loads(result.content[0].text)
    assert answer == {"taskId": "proj", "escalationId": listed["id"], "responseType": "option",
                      "selectedOption": "opt2", "selectedLabel": "No, keep sessions", "textResponse": None,
                      "additionalInstructions": "Keep the cookie one release", "resolvedBy": "human"}
    (row,) = desk.rows()
    assert (row["status"], row["resolved_by"]) == ("decided", "human")
    assert "Traceback" not in desk.server_errors()


@pytest.mark.parametrize("how, expected", [
    (["--text", "Ship it behind a flag"], {"responseType": "text", "textResponse": "Ship it behind a flag"}),
    (["--skip"], {"responseType": "skip"}),
    (["--agent-decide"], {"responseType": "agent_decide"}),
])
async def test_every_kind_of_answer_comes_back_as_seed_004_says(desk, how, expected) -> None:
    async with desk.stdio() as client:
        waiting = call(client, desk, **question(allowAgentDecision=True))
        (listed,) = await desk.listed()
        desk.answer(listed["id"], *how)
        answer = (await asyncio.wait_for(waiting, WAIT)).structured_content
    assert {k: answer.get(k) for k in expected} == expected and answer["resolvedBy"] == "human"


async def test_a_client_that_disconnects_asks_again_and_gets_the_same_escalation_then_its_decision(desk) -> None:
    async with desk.stdio() as client:  # the client (and with it its server process) goes away mid-wait
        waiting = call(client, desk, **question(requestId="plan-42"))
        (first,) = await desk.listed()
        waiting.cancel()
    (row,) = desk.rows()
    assert row["status"] == "pending"  # kept for its client: not withdrawn
    db = Database(desk.db_url)
    try:  # whoever sweeps for gone askers (a hook, a console), even an hour later, leaves it be
        assert withdraw_gone(db, now=time.time() + 3600) == []
    finally:
        db.close()
    async with desk.stdio() as client:  # a new client process, a new server process: the same request
        waiting = call(client, desk, **question(requestId="plan-42"))
        for _ in range(int(WAIT * 10)):  # it waits on the same escalation (its progress names it)
            if desk.progress:
                break
            await asyncio.sleep(0.1)
        assert [p["id"] for p in await desk.listed()] == [first["id"]]
        desk.answer(first["id"], "--option", "opt1")
        answer = (await asyncio.wait_for(waiting, WAIT)).structured_content
    assert (answer["escalationId"], answer["selectedOption"], answer["resolvedBy"]) == (first["id"], "opt1", "human")
    async with desk.stdio() as client:  # asked once more after the decision: the decision, at once
        again = (await client.call_tool("escalate_to_human", question(requestId="plan-42"))).structured_content
    assert again == answer
    assert [r["id"] for r in desk.rows()] == [first["id"]]  # never raised twice
    assert "Traceback" not in desk.server_errors()


async def test_a_call_cancelled_on_the_same_connection_is_continued_by_the_same_request_id(desk) -> None:
    """A client's own tool timeout cancels the call; its retry watches the same wait."""
    async with desk.stdio() as client:
        waiting = call(client, desk, **question(requestId="retry-1"))
        (first,) = await desk.listed()
        waiting.cancel()
        await asyncio.sleep(0.5)
        retry = call(client, desk, **question(requestId="retry-1"))
        desk.answer(first["id"], "--option", "opt1")
        answer = (await asyncio.wait_for(retry, WAIT)).structured_content
    assert (answer["escalationId"], answer["selectedOption"]) == (first["id"], "opt1")
    assert [r["status"] for r in desk.rows()] == ["decided"]


async def test_without_a_request_id_a_cancelled_call_is_withdrawn(desk) -> None:
    """Watched while the server lives: once the client has gone, its SDK kills a server that has
    not ended within 2 s, and a server killed that way leaves the request pending (README), which
    a loaded host made this test's outcome depend on."""
    async with desk.stdio() as client:
        waiting = call(client, desk, **question())
        (listed,) = await desk.listed()
        waiting.cancel()
        for _ in range(int(WAIT * 10)):
            if desk.rows()[0]["status"] != "pending":
                break
            await asyncio.sleep(0.1)
    (row,) = desk.rows()
    assert (row["id"], row["status"]) == (listed["id"], "withdrawn")
    out = desk.escalate("answer", listed["id"], "--option", "opt1")
    assert out.returncode == 1 and "withdrawn" in out.stderr  # nobody decides it into nothing


async def test_a_server_killed_with_sigkill_leaves_no_call_without_a_request_id_pending(desk) -> None:
    """Nothing that waits may live only in a dead process: a call without a `requestId` (nobody
    can come back for it) whose server is killed with SIGKILL is withdrawn by the next process
    that sweeps (here the client's next server), shown withdrawn and never decided; a call with
    a `requestId` of the same session stays pending for its client."""
    import os
    import signal

    from engine.durable.database import HEARTBEAT_SECONDS

    async with desk.stdio() as client:
        once = call(client, desk, **question())
        kept = call(client, desk, **question(requestId="plan-7", question="Split the service?"))
        await desk.listed(2)
        db = Database(desk.db_url)
        try:
            (run,) = db.list_runs()
            assert run["status"] == "waiting" and run["owner"]
            os.kill(int(run["owner"].rsplit("-", 2)[1]), signal.SIGKILL)  # owner: host-pid-random
            deadline = time.monotonic() + WAIT
            while (db.get_run(run["run_id"])["heartbeat"] or 0) > time.time() - 2 * HEARTBEAT_SECONDS - 0.5:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.2)  # until its last beat is old enough to tell it gone
        finally:
            db.close()
        for waiting in (once, kept):
            waiting.cancel()
        await asyncio.gather(once, kept, return_exceptions=True)
    assert [r["status"] for r in desk.rows()] == ["pending", "pending"]  # the dead server could not withdraw it
    async with desk.stdio() as client:  # the client's next server: it sweeps when it opens the database
        await client.list_tools()
    by_question = {json.loads(r["payload"])["escalation"]["question"] if isinstance(r["payload"], str)
                   else r["payload"]["escalation"]["question"]: r for r in desk.rows()}
    lost, waits = by_question["Use JWT instead of sessions?"], by_question["Split the service?"]
    assert (lost["status"], waits["status"]) == ("withdrawn", "pending")
    assert "-once-" in lost["id"] and "-once-" not in waits["id"]
    out = desk.escalate("answer", lost["id"], "--option", "opt1")
    assert out.returncode == 1 and "withdrawn" in out.stderr  # never decided into nothing
    listed = json.loads(desk.escalate("runs", "--all", "--format", "json").stdout)
    (run_view,) = listed
    assert [p["id"] for p in run_view["pending"]] == [waits["id"]]
    assert [(d["id"], d["state"]) for d in run_view["decisions"]] == [(lost["id"], "withdrawn")]
    assert "Traceback" not in desk.server_errors()


@pytest.mark.parametrize("extra, expected", [
    ({"reason": "cost_warning", "allowAgentDecision": True}, "agent_decide"),  # the agent may decide: it is told to
    ({"reason": "test_failure"}, "skip"),  # the shipped rules' test_failure default: stop
    ({"reason": "architecture_decision", "timeout": None}, None),  # its default is to wait for a person
])
async def test_a_deadline_passing_applies_the_default_as_timeout_default(desk, extra, expected) -> None:
    arguments = {k: v for k, v in question(**{"timeout": 1, **extra}).items() if v is not None}
    async with desk.stdio() as client:
        waiting = call(client, desk, **arguments)
        if expected is None:  # no deadline: still waiting well after a second, until a person answers
            (listed,) = await desk.listed()
            await asyncio.sleep(2)
            assert not waiting.done() and desk.rows()[0]["status"] == "pending"
            desk.answer(listed["id"], "--option", "opt1")
        result = await asyncio.wait_for(waiting, WAIT)
    answer = result.structured_content
    (row,) = desk.rows()
    if expected is None:
        assert (answer["resolvedBy"], row["resolved_by"]) == ("human", "human")
        return
    assert (answer["responseType"], answer["resolvedBy"]) == (expected, "timeout_default")
    assert answer["note"]
    assert (row["status"], row["resolved_by"]) == ("decided", "timeout_default")


HOSTILE = [
    ({"question": "q"}, "reason: expected one of"),
    ({"reason": ["other"], "question": "q"}, "reason: expected one of"),
    ({"reason": "other"}, "question: expected a string, not null"),
    ({"reason": "other", "question": "   "}, "question: must not be empty"),
    ({"reason": "other", "question": 42}, "question: expected a string, not a number"),
    ({"reason": "other", "question": "x" * 100_000}, "question: 100000 characters, at most 4000"),
    ({"reason": "other", "question": "see \x1b]52;c;ZXZpbA==\x07"}, "question: control character U+001B"),
    ({"reason": "other", "question": "q", "context": "ok\u202eevil"}, "context: control character U+202E"),
    ({"reason": "other", "question": "q", "context": "c" * 64_001}, "context: 64001 characters"),
    ({"reason": "other", "question": "q", "options": "yes/no"}, "options: expected an array"),
    ({"reason": "other", "question": "q", "options": [{"id": "a"}]}, "options[0].label: expected a string"),
    ({"reason": "other", "question": "q", "options": [{"id": "a b", "label": "A"}]}, "options[0].id: expected"),
    ({"reason": "other", "question": "q", "options": [{"id": "a", "label": "A"}] * 2}, "options[1].id: 'a' is already"),
    ({"reason": "other", "question": "q", "options": [{"id": f"o{i}", "label": "L"} for i in range(21)]},
     "options: 21 options, at most 20"),
    ({"reason": "other", "question": "q", "options": [{"id": "a", "label": "A", "recommended": "yes"}]},
     "options[0].recommended: expected true or false"),
    ({"reason": "other", "question": "q", "options": [{"id": "a", "label": "A", "onclick": 1}]}, "unknown"),
    ({"reason": "other", "question": "q", "allowAgentDecision": "true"}, "allowAgentDecision: expected true or false"),
    ({"reason": "other", "question": "q", "timeout": "120"}, "timeout: expected a number of seconds, not a string"),
    ({"reason": "other", "question": "q", "timeout": -1}, "timeout: expected seconds above 0"),
    ({"reason": "other", "question": "q", "timeout": 1e300}, "timeout: expected seconds above 0"),
    ({"reason": "other", "question": "q", "timeout": True}, "timeout: expected a number of seconds, not a boolean"),
    ({"reason": "other", "question": "q", "requestId": "../../etc"}, "requestId: expected"),
    ({"reason": "other", "question": "q", "requestId": "r" * 129}, "requestId: expected"),
    ({"reason": "other", "question": "q", "taskId": "other-task"}, "unknown argument 'taskId'"),
]


async def test_hostile_arguments_are_a_tool_error_naming_the_field_and_nothing_is_asked(desk) -> None:
    async with desk.stdio() as client:
        for arguments, expected in HOSTILE:
            result = await client.call_tool("escalate_to_human", arguments)
            text = result.content[0].text
            assert result.is_error and expected in text, (arguments, text)
            assert "\n" not in text and "\x1b" not in text and "Traceback" not in text
        unknown = await client.call_tool("rm_rf", {})
        assert unknown.is_error and "escalate_to_human" in unknown.content[0].text
        # The server is still there and asks a good question after all that.
        waiting = call(client, desk, **question(reason="cost_warning", timeout=1, allowAgentDecision=True))
        assert (await asyncio.wait_for(waiting, WAIT)).structured_content["resolvedBy"] == "timeout_default"
    assert len(desk.rows()) == 1
    assert "Traceback" not in desk.server_errors()


@pytest.mark.parametrize("argv, expected", [
    (["--rules", "missing.yaml"], "missing.yaml"),
    (["--db", "mysql://nobody@nowhere/x"], "--db"),
    (["--http", "--port", "99999"], "not a port number"),
    (["--http", "--host", "192.0.2.1", "--port", "0"], "cannot listen on 192.0.2.1:0"),  # not this machine's
])
def test_bad_arguments_are_one_line_and_exit_2(desk, argv, expected) -> None:
    out = subprocess.run(desk.command(*argv), cwd=desk.project, env=desk.env(), capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and expected in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_escalate_mcp_imports_no_adk_genai_or_textual(desk, monkeypatch) -> None:
    """The server answers a call with `-X importtime` on: none of them was imported."""
    async def session() -> None:
        async with desk.stdio() as client:
            await client.call_tool("escalate_to_human", question(reason="cost_warning", timeout=0.5))

    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    asyncio.run(session())
    log = desk.server_errors()
    imported = {line.rsplit("|", 1)[-1].strip() for line in log.splitlines() if line.startswith("import time:")}
    assert "mcp.server.lowlevel.server" in imported and "engine.outside.core" in imported  # it did run
    heavy = sorted(m for m in imported if m.split(".")[0] == "textual" or m.startswith(("google.adk", "google.genai")))
    assert heavy == []
    assert desk.rows()[0]["resolved_by"] == "timeout_default"


def test_hostile_messages_on_the_wire_get_errors_not_a_traceback(desk) -> None:
    """Raw JSON-RPC lines (what no SDK client would send): each gets an error or is dropped, the
    server stays up and answers a good request after them."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "\x1b]0;x\x07evil", "version": "1"}}}
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             "{not json", "[]", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                             "params": {"name": "escalate_to_human", "arguments": [1, 2]}}),
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 7}}),
             json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": {"name": "escalate_to_human", "arguments": {"reason": "other", "question": "q" * 2_000_000}}}),
             json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})]
    proc = subprocess.Popen(desk.command(), cwd=desk.project, env=desk.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    replies: dict[int, dict] = {}
    while 4 not in replies:  # (the test's timeout bounds this)
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        reply = json.loads(line)
        replies[reply.get("id")] = reply
    proc.stdin.close()
    proc.wait(60)
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.returncode == 0 and "Traceback" not in err, err[-2000:]
    assert "error" in replies[1] or replies[1]["result"]["isError"]
    assert "error" in replies[2]
    assert replies[3]["result"]["isError"] and "at most 4000" in replies[3]["result"]["content"][0]["text"]
    assert [t["name"] for t in replies[4]["result"]["tools"]] == ["escalate_to_human"]
    assert desk.rows() == []


async def test_withdrawn_elsewhere_the_call_ends_with_a_tool_error(desk) -> None:
    """A console that withdraws the request (its run cancelled) ends the call with a clear
    error, not a call that hangs or a cancelled request."""
    async with desk.stdio() as client:
        waiting = call(client, desk, **question(requestId="w-1"))
        (listed,) = await desk.listed()
        db = Database(desk.db_url)
        try:
            db.withdraw(listed["id"])
        finally:
            db.close()
        result = await asyncio.wait_for(waiting, WAIT)
    assert result.is_error and f"{listed['id']} was withdrawn" in result.content[0].text
    assert "Traceback" not in desk.server_errors()


async def test_on_postgresql_a_disconnected_request_is_continued_and_answered(tmp_path, pg_url) -> None:
    """The same on a real PostgreSQL server: asked, the client gone, asked again, answered."""
    desk = Desk(tmp_path, pg_url, tmp_path / "servers.log")
    async with desk.stdio() as client:
        waiting = call(client, desk, **question(requestId="pg-1"))
        (first,) = await desk.listed()
        waiting.cancel()
    async with desk.stdio() as client:
        waiting = call(client, desk, **question(requestId="pg-1"))
        for _ in range(int(WAIT * 10)):
            if desk.progress:
                break
            await asyncio.sleep(0.1)
        desk.answer(first["id"], "--text", "on PostgreSQL too")
        answer = (await asyncio.wait_for(waiting, WAIT)).structured_content
    assert (answer["escalationId"], answer["textResponse"], answer["resolvedBy"]) == (first["id"], "on PostgreSQL too", "human")
    assert [r["status"] for r in desk.rows()] == ["decided"]
    assert "Traceback" not in desk.server_errors()
