"""One capped transport serves every model client of the process (engine/runtime/reply_cap.py):
LiteLLM's session, its HTTP handler, each Gemini model's google.genai client. A client closed
must not close the others' connections. google.genai closes its client when the client is
collected (`AsyncHttpxClient.__del__` schedules `aclose()` on whatever loop runs then): a
previous run's or test's client, collected in the middle of a streamed reply, cut that reply
off ("the reply was cut off", tests/models/test_openai_http.py, once in a CI run)."""

from __future__ import annotations

import asyncio
import gc

import httpx

from engine.runtime.engine import RunStatus
from engine.runtime.reply_cap import capped_client, capped_transport
from tests.models.conftest import RealRun, openai_model
from tests.models.llm_server import ModelServer, Turn

AGENT = """
prompt p: \"\"\"You help.\"\"\"
agent main:
    instruction p
"""


async def test_another_client_closed_mid_reply_leaves_the_reply_whole(server: ModelServer) -> None:
    server.push(Turn(chunks=["one ", "two ", "three ", "four"], pause=0.2))
    reader = capped_client()
    body = {"model": "gpt-test", "stream": True, "messages": [{"role": "user", "content": "go"}]}
    lines: list[str] = []
    async with reader.stream("POST", f"{server.url}/chat/completions", json=body) as reply:
        async for line in reply.aiter_lines():
            lines.append(line)
            if len(lines) == 1:  # a reply under way: another client of the same transport goes away
                other = httpx.AsyncClient(transport=capped_transport())
                await other.aclose()
    assert lines[-2:] == ["data: [DONE]", ""] or "data: [DONE]" in lines, lines
    text = "".join(line for line in lines if '"content"' in line)
    assert all(word in text for word in ("one", "two", "three", "four")), lines


async def test_a_gemini_client_collected_mid_reply_leaves_a_run_s_reply_whole(real: RealRun, server: ModelServer,
                                                                             monkeypatch) -> None:
    """The CI failure, end to end: a streamed reply through LiteLLM while a google.genai client,
    built as engine/runtime/models.py builds Gemini's, is collected."""
    from google.genai import Client, types

    monkeypatch.setenv("ESCALATE_STREAM", "1")
    server.push(Turn(chunks=["The change ", "is ", "safe", "."], pause=0.3))

    async def collect_a_gemini_client_mid_reply() -> None:
        while not server.requests:
            await asyncio.sleep(0.01)
        options = types.HttpOptions(async_client_args={"transport": capped_transport(), "trust_env": False})
        client = Client(api_key="test-google-key", http_options=options)
        del client
        gc.collect()

    collecting = asyncio.ensure_future(collect_a_gemini_client_mid_reply())
    handle = await real.run(openai_model(server) + AGENT, input="Is it safe?")
    await collecting
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "The change is safe."
