"""`escalate mcp --http`: streamable HTTP on 127.0.0.1 behind the one-time token, driven by the
`mcp` package's own client (real sockets, a real server process)."""

from __future__ import annotations

import asyncio
import signal

import httpx2
import pytest
from mcp import Client

from engine.outside.mcp_http import COOKIE
from tests.outside.mcp_harness import WAIT, Desk, call, question, start_http

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def desk(tmp_path) -> Desk:
    return Desk.make(tmp_path)


async def test_the_printed_url_answers_one_client_answered_from_the_shell(desk) -> None:
    server = start_http(desk)
    try:
        async with Client(server.url) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["escalate_to_human"]
            waiting = call(client, desk, **question(requestId="h-1"))
            (listed,) = await desk.listed()
            desk.answer(listed["id"], "--text", "Use JWT, rotate keys daily")
            answer = (await asyncio.wait_for(waiting, WAIT)).structured_content
        assert (answer["responseType"], answer["textResponse"], answer["resolvedBy"]) == (
            "text", "Use JWT, rotate keys daily", "human")
        with pytest.raises(Exception):  # the token is spent: the same URL again is refused
            async with Client(server.url) as again:
                await again.list_tools()
    finally:
        code, err = server.stop()
    assert code == 0 and "stopped" in err and "Traceback" not in err


async def test_without_the_token_nothing_is_served(desk) -> None:
    server = start_http(desk)
    try:
        async with httpx2.AsyncClient() as http:
            for url, headers in ((server.base, {}), (server.base + "?token=", {}),
                                 (server.base + "?token=wrong", {}),
                                 (server.base, {"Authorization": "Bearer wrong"}),
                                 (server.url + "x", {}),
                                 (server.base, {"Cookie": f"{COOKIE}=forged"})):
                response = await http.post(url, json=INITIALIZE, headers={**HEADERS, **headers})
                assert response.status_code == 401, (url, headers)
                assert "escalate_to_human" not in response.text
        # Nothing above spent the token: the right one still works, once, pinned to its client.
        async with httpx2.AsyncClient() as http:
            first = await http.post(server.base, json=INITIALIZE,
                                    headers={**HEADERS, "Authorization": f"Bearer {server.url.split('token=')[1]}"})
            assert first.status_code == 200 and COOKIE in first.headers.get("set-cookie", "")
            session = http.cookies[COOKIE]
        async with httpx2.AsyncClient() as other:  # the cookie at another address (a rebound name): refused
            moved = await other.post(server.base, json=INITIALIZE,
                                     headers={**HEADERS, "Cookie": f"{COOKIE}={session}", "Host": "evil.example:80"})
            assert moved.status_code == 401
            again = await other.post(server.url, json=INITIALIZE, headers=HEADERS)  # the spent token
            assert again.status_code == 401
    finally:
        code, _ = server.stop()
    assert code == 0
    assert desk.rows() == []


async def test_a_client_that_reconnects_with_the_same_request_id_gets_the_same_escalation(desk) -> None:
    """Over HTTP the server outlives its client's connection: the wait goes on, and the same
    `requestId` from a new connection watches it (here after a restart of the server, too)."""
    server = start_http(desk)
    try:
        async with Client(server.url) as client:
            waiting = call(client, desk, **question(requestId="h-2"))
            (first,) = await desk.listed()
            waiting.cancel()
    finally:
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(WAIT)
    assert desk.rows()[0]["status"] == "pending"
    server = start_http(desk)  # a new server: a new one-time URL
    try:
        async with Client(server.url) as client:
            waiting = call(client, desk, **question(requestId="h-2"))
            assert [p["id"] for p in await desk.listed()] == [first["id"]]
            desk.answer(first["id"], "--option", "opt2")
            answer = (await asyncio.wait_for(waiting, WAIT)).structured_content
        assert (answer["escalationId"], answer["selectedOption"]) == (first["id"], "opt2")
    finally:
        code, err = server.stop()
    assert code == 0 and "Traceback" not in err
