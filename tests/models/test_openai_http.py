"""Real models through LiteLLM against a local OpenAI-compatible server (a real socket):
replies streamed and not, tool calls through the rules, the escalation protocol, retries,
timeouts, errors in one line, token counts."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from engine.kernel.model import ResolvedBy, Response, ResponseType
from engine.runtime.engine import RunStatus
from tests.models.conftest import FAKE_OPENAI_KEY, RealRun, fields, openai_model
from tests.models.llm_server import ModelServer, Turn

AGENT = """
prompt p: \"\"\"You help with the change.\"\"\"
agent main:
    instruction p
    {extra}
"""

TOOLS = """
tool fs = builtin streetrace.fs
prompt p: \"\"\"You write files.\"\"\"
agent main:
    instruction p
    tools fs
    {extra}
"""

ESCALATION = {
    "escalation": True, "reason": "architecture_decision", "question": "Use JWT instead of sessions?",
    "context": "Touches src/api/auth.ts", "options": [{"id": "opt1", "label": "Yes, use JWT", "recommended": True},
                                                      {"id": "opt2", "label": "No, keep sessions"}],
}


def source(server: ModelServer, body: str = AGENT, extra: str = "", policies: str = "") -> str:
    return openai_model(server) + policies + body.format(extra=extra)


def messages(server: ModelServer, n: int) -> list[dict]:
    return server.requests[n]["body"]["messages"]


@pytest.mark.parametrize("stream", ["", "1"])
async def test_plain_reply_and_its_tokens(real: RealRun, server: ModelServer, monkeypatch, stream: str) -> None:
    monkeypatch.setenv("ESCALATE_STREAM", stream)
    server.push(Turn(text="The change is safe.", usage=(120, 7)))
    handle = await real.run(source(server), input="Is it safe?")
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "The change is safe."
    assert handle.tokens == 127
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["authorization"] == f"Bearer {FAKE_OPENAI_KEY}"
    assert bool(request["body"].get("stream")) is bool(stream)
    sent = request["body"]["messages"]
    assert sent[0]["role"] == "system" and "You help with the change." in sent[0]["content"]
    assert '"escalation": true' in sent[0]["content"]  # the protocol note reaches a real model
    assert sent[-1] == {"role": "user", "content": "Is it safe?"} or "Is it safe?" in json.dumps(sent[-1])


async def test_tool_calls_go_through_the_rules(real: RealRun, server: ModelServer) -> None:
    (real.workspace / "old.txt").write_text("keep me")
    server.push(
        Turn(tool_calls=[("write_file", {"path": "notes.txt", "content": "hello"})]),
        Turn(tool_calls=[("delete_file", {"path": "old.txt"})]),
        Turn(text="Wrote notes.txt; old.txt was not deleted."),
    )
    rules = """
    escalationRules:
      global:
        - {pattern: "delete_file", action: deny}
    """
    handle = await real.run(source(server, TOOLS), rules=rules)
    assert handle.status is RunStatus.DONE, handle.error
    assert (real.workspace / "notes.txt").read_text() == "hello"
    assert (real.workspace / "old.txt").read_text() == "keep me"
    assert [(c["tool"], c["verdict"]) for c in fields(handle, "tool_call")] == [("write_file", "allowed"), ("delete_file", "denied")]
    tools = server.requests[0]["body"]["tools"]
    assert {"write_file", "delete_file", "ask_human"} <= {t["function"]["name"] for t in tools}
    # Each tool's result went back to the model as a `tool` message answering its call id.
    answered = [m for m in messages(server, 2) if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answered] == ["call_0", "call_0"]
    assert "was denied by" in answered[-1]["content"]


@pytest.mark.parametrize("stream", ["", "1"])
async def test_escalation_json_split_across_chunks_amid_prose(real: RealRun, server: ModelServer, monkeypatch, stream: str) -> None:
    monkeypatch.setenv("ESCALATE_STREAM", stream)
    text = f"I need a decision first.\n```json\n{json.dumps(ESCALATION)}\n```\nThanks!"
    cut = [text[:30], text[30:47], text[47:90], text[90:]]  # the JSON is split mid-key and mid-string
    server.push(Turn(text=text, chunks=cut), Turn(text="Switched to JWT."))
    answers = "- {responseType: option, selectedOption: opt1, additionalInstructions: Keep the cookie one release}\n"
    handle = await real.run(source(server), answers=answers)
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "Switched to JWT."
    (raised,) = fields(handle, "human_escalation")
    assert raised["question"] == "Use JWT instead of sessions?" and raised["reason"] == "architecture_decision"
    (decision,) = fields(handle, "decision")
    assert decision["resolvedBy"] == "answers_file" and decision["selectedOption"] == "opt1"
    told = messages(server, 1)[-1]["content"]
    told = told if isinstance(told, str) else json.dumps(told)
    assert "opt1" in told and "Keep the cookie one release" in told


async def test_ask_human_tool_from_a_real_model(real: RealRun, server: ModelServer) -> None:
    args = {"question": "Which database?", "reason": "unclear_requirement",
            "options": [{"id": "pg", "label": "PostgreSQL"}, {"id": "lite", "label": "SQLite"}]}
    server.push(Turn(tool_calls=[("ask_human", args)]), Turn(text="Using PostgreSQL."))
    handle = await real.run(source(server, TOOLS), answers="- {responseType: option, selectedOption: pg}\n")
    assert handle.status is RunStatus.DONE, handle.error
    assert fields(handle, "human_escalation")[0]["question"] == "Which database?"
    result = [m for m in messages(server, 1) if m["role"] == "tool"][-1]["content"]
    assert "pg" in result and "PostgreSQL" in result


async def test_429_waits_as_long_as_retry_after_says(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(status=429, headers={"Retry-After": "1"}), Turn(text="done"))
    started = time.monotonic()
    handle = await real.run(source(server, extra="retry twice", policies="retry twice = 2 times, exponential backoff\n"))
    assert handle.status is RunStatus.DONE, handle.error
    assert time.monotonic() - started >= 1.0  # the server's 1 s, not the policy's 0.2 s
    (log,) = [f["message"] for f in fields(handle, "log") if "retry" in f["message"]]
    assert "model 'main' (openai/gpt-test" in log and "rate limited (HTTP 429, retry after 1 s)" in log
    assert "retry 1 of 2 in 1 s" in log
    assert len(server.requests) == 2


async def test_500s_retried_with_backoff_then_one_line(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(status=500), Turn(status=502), Turn(text="third time lucky"))
    policy = "retry thrice = 3 times, exponential backoff\n"
    handle = await real.run(source(server, extra="retry thrice", policies=policy))
    assert handle.status is RunStatus.DONE, handle.error
    delays = [f["message"].rsplit(" in ", 1)[1] for f in fields(handle, "log") if "retry" in f["message"]]
    assert delays == ["0.2 s", "0.4 s"]  # exponential
    server.push(Turn(status=500), Turn(status=500))
    handle = await real.run(source(server, extra="retry once", policies="retry once = 1 times, exponential backoff\n"))
    assert handle.status is RunStatus.FAILED
    assert "\n" not in handle.error
    assert "model 'main' (openai/gpt-test at http://127.0.0.1:" in handle.error
    assert "server error (HTTP 500)" in handle.error


async def test_401_is_not_retried(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(status=401), Turn(text="never asked"))
    handle = await real.run(source(server, extra="retry thrice", policies="retry thrice = 3 times, exponential backoff\n"))
    assert handle.status is RunStatus.FAILED
    assert "authentication failed (check the API key) (HTTP 401): Incorrect API key provided" in handle.error
    assert len(server.requests) == 1


async def test_no_retry_policy_means_one_attempt(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(status=503), Turn(text="never asked"))
    handle = await real.run(source(server))
    assert handle.status is RunStatus.FAILED and "server error (HTTP 503)" in handle.error
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", ["", "1"])
async def test_a_reply_cut_off_is_retried(real: RealRun, server: ModelServer, monkeypatch, stream: str) -> None:
    monkeypatch.setenv("ESCALATE_STREAM", stream)
    server.push(Turn(text="This reply will never arrive whole", cut=True), Turn(text="whole reply"))
    handle = await real.run(source(server, extra="retry once", policies="retry once = 1 times, fixed backoff\n"))
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "whole reply"
    (log,) = [f["message"] for f in fields(handle, "log") if "retry" in f["message"]]
    assert "the reply was cut off" in log


async def test_reply_cut_at_the_token_limit(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(text="The answer is", finish="length"))
    handle = await real.run(source(server))
    assert handle.status is RunStatus.FAILED
    assert "model 'main'" in handle.error and "cut off at the token limit" in handle.error


async def test_unreachable_server_is_one_line(real: RealRun) -> None:
    closed = ModelServer()
    url = closed.url
    closed.httpd.server_close()  # never served; the port was ours and is closed now: nothing listens
    sr = AGENT.format(extra="") + f'model main:\n    provider: openai\n    name: gpt-test\n    base_url: "{url}"\n'
    handle = await real.run(sr)
    assert handle.status is RunStatus.FAILED
    assert "\n" not in handle.error and "cannot reach the server" in handle.error and url in handle.error


async def test_timeout_policy_on_a_hung_server_then_retry(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(text="too late", hang=3), Turn(text="in time"))
    policies = "retry once = 1 times, fixed backoff\ntimeout quick = 1 seconds\n"
    handle = await real.run(source(server, extra="retry once\n    timeout quick", policies=policies))
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "in time"  # not "too late": the hung reply was given up, not waited for
    assert any("timed out after 1 s" in f["message"] for f in fields(handle, "log"))


async def test_a_human_wait_does_not_count_against_the_timeout(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(text=json.dumps(ESCALATION)), Turn(text="went with sessions"))
    policies = "timeout quick = 3 seconds\n"
    run = asyncio.ensure_future(real.run(source(server, extra="timeout quick", policies=policies), answers=None))
    while not run.done() and (real.broker is None or not real.broker.pending()):
        await asyncio.sleep(0.05)
    assert not run.done(), run.result().error
    await asyncio.sleep(4)  # longer than the agent's whole timeout
    pending = real.broker.pending()[0]
    real.broker.answer(pending.escalation.id, Response(ResponseType.OPTION, selected_option="opt2"), ResolvedBy.HUMAN)
    handle = await run
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "went with sessions"
