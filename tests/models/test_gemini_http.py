"""Gemini through ADK's own `Gemini` class (google.genai), pointed by `base_url` at the local
server speaking Gemini's wire format: `/v1beta/models/M:generateContent` and its SSE stream."""

from __future__ import annotations

import pytest

from engine.runtime.engine import RunStatus
from tests.models.conftest import RealRun, fields, gemini_model
from tests.models.llm_server import ModelServer, Turn

TOOLS = """
tool fs = builtin streetrace.fs
retry twice = 2 times, exponential backoff
prompt p: \"\"\"You write files.\"\"\"
agent main:
    instruction p
    tools fs
    retry twice
"""


@pytest.mark.parametrize("stream", ["", "1"])
async def test_gemini_reply_tool_call_and_tokens(real: RealRun, server: ModelServer, monkeypatch, stream: str) -> None:
    monkeypatch.setenv("ESCALATE_STREAM", stream)
    server.push(Turn(tool_calls=[("write_file", {"path": "g.txt", "content": "from gemini"})], usage=(40, 4)),
                Turn(text="Wrote g.txt.", usage=(60, 3)))
    handle = await real.run(gemini_model(server) + TOOLS)
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "Wrote g.txt."
    assert (real.workspace / "g.txt").read_text() == "from gemini"
    assert handle.tokens == 107
    first = server.requests[0]
    suffix = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    assert first["path"] == f"/v1beta/models/gemini-test{suffix}"
    assert first["headers"]["x-goog-api-key"] == "test-google-key"
    declared = {d["name"] for t in first["body"]["tools"] for d in t.get("functionDeclarations", [])}
    assert {"write_file", "ask_human"} <= declared
    answered = [p for c in server.requests[1]["body"]["contents"] for p in c["parts"] if "functionResponse" in p]
    assert answered[-1]["functionResponse"]["name"] == "write_file"


async def test_gemini_errors_retried_then_one_line(real: RealRun, server: ModelServer) -> None:
    server.push(Turn(status=429), Turn(status=500), Turn(text="ok"))
    handle = await real.run(gemini_model(server) + TOOLS)
    assert handle.status is RunStatus.DONE, handle.error
    logs = [f["message"] for f in fields(handle, "log") if "retry" in f["message"]]
    assert "rate limited (HTTP 429)" in logs[0] and "model 'main' (gemini/gemini-test" in logs[0]
    assert "server error (HTTP 500)" in logs[1]
    server.push(Turn(status=401))
    handle = await real.run(gemini_model(server) + TOOLS)
    assert handle.status is RunStatus.FAILED and "\n" not in handle.error
    assert "authentication failed (check the API key) (HTTP 401)" in handle.error
