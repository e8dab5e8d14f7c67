"""The token gate of `escalate serve`, on a real server on 127.0.0.1 (no console is opened:
every request here is refused before one would be, or asks for the page only)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tui.web.gate import COOKIE, TokenGate
from tui.web.server import REFUSED, ConsoleServer

NEVER = [sys.executable, "-c", "raise SystemExit('no console may start in these tests')"]


@pytest.fixture
async def served() -> AsyncIterator[tuple[ConsoleServer, str]]:
    server = ConsoleServer("127.0.0.1", 0, lambda: NEVER)
    port = await server.start()
    try:
        yield server, f"http://127.0.0.1:{port}"
    finally:
        await server.stop()


def client() -> aiohttp.ClientSession:
    """A browser of its own: its own cookies (127.0.0.1 is an IP: aiohttp keeps its cookies only
    when told to)."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def refused(http: aiohttp.ClientSession, url: str) -> None:
    async with http.get(url, allow_redirects=False) as response:
        assert response.status == 403, url
        assert await response.text() == REFUSED  # nothing of the console, whatever was asked
        assert COOKIE not in response.cookies


async def test_without_the_token_nothing_is_served(served) -> None:
    server, base = served
    async with client() as http:
        for path in ("/", "/ws", "/static/js/textual.js", "/static/css/xterm.css", "/static/", "/nothing",
                     "/?token=", "/?token=wrong", f"/?token={server.gate.token}x", f"/ws?token={server.gate.token}",
                     f"/static/js/textual.js?token={server.gate.token}"):
            await refused(http, base + path)
        with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
            await http.ws_connect(base + "/ws")
        assert handshake.value.status == 403
    assert not server.gate.spent  # none of that used the token up


async def test_the_token_works_once_in_one_browser(served) -> None:
    server, base = served
    link = f"{base}/?token={server.gate.token}"
    async with client() as first, client() as second:
        async with first.get(link, allow_redirects=False) as response:
            assert response.status == 303 and response.headers["Location"] == "/"  # the token leaves the address bar
            cookie = response.cookies[COOKIE]
            assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
            assert cookie.value != server.gate.token
        async with first.get(base + "/") as page:
            assert page.status == 200
            body = await page.text()
            assert 'data-session-websocket-url="ws://127.0.0.1:' in body and server.gate.token not in body
            assert page.headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
            assert page.headers["Referrer-Policy"] == "no-referrer" and page.headers["Cache-Control"] == "no-store"
        async with first.get(base + "/static/js/textual.js") as script:
            assert script.status == 200 and len(await script.read()) > 100_000
        async with first.get(base + "/", headers={"X-Forwarded-Proto": "https", "Host": 'proxy.example"><b'}) as proxied:
            body = await proxied.text()  # behind a TLS proxy: wss://, and the Host header escaped
            assert 'data-session-websocket-url="wss://proxy.example&quot;&gt;&lt;b/ws"' in body
        async with first.get(link) as again:  # the same browser, the link again: still in (by its cookie)
            assert again.status == 200

        await refused(second, link)  # another browser: the token is spent
        await refused(second, base + "/")


async def test_a_stolen_or_forged_cookie_and_a_foreign_page_are_refused(served) -> None:
    server, base = served
    async with client() as http:
        async with http.get(f"{base}/?token={server.gate.token}", allow_redirects=False) as response:
            session = response.cookies[COOKIE].value
        # A page of another site opening the websocket with this browser's cookie (the
        # cookie is SameSite=Strict; the Origin check holds even where SameSite would not).
        with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
            await http.ws_connect(base + "/ws", headers={"Origin": "http://evil.example"})
        assert handshake.value.status == 403
    for forged in (session + "x", session[:-1], "", "é" * 43, session.upper()):
        async with aiohttp.ClientSession(headers={"Cookie": f"{COOKIE}={forged}"}) as http:
            await refused(http, base + "/")


def test_the_gate_alone() -> None:
    gate = TokenGate()
    assert len(gate.token) >= 43  # 256 random bits, URL-safe
    assert gate.exchange("nope") is None and not gate.spent
    assert not gate.admits(None) and not gate.admits("")
    session = gate.exchange(gate.token)
    assert session and gate.spent and gate.admits(session)
    assert gate.exchange(gate.token) is None  # once
    assert not gate.admits(gate.token) and not gate.admits("\udcff")
    assert TokenGate().token != TokenGate().token


async def test_sessions_beyond_the_limit_are_refused_not_queued() -> None:
    server = ConsoleServer("127.0.0.1", 0, lambda: NEVER, max_sessions=0)
    port = await server.start()
    try:
        async with client() as http:
            async with http.get(f"http://127.0.0.1:{port}/?token={server.gate.token}"):
                pass
            with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
                await http.ws_connect(f"http://127.0.0.1:{port}/ws")
            assert handshake.value.status == 503
    finally:
        await server.stop()


async def test_a_console_that_fails_to_start_ends_the_page_s_session(served) -> None:
    server, base = served  # its consoles exit at once, as a broken install would
    async with client() as http:
        async with http.get(f"{base}/?token={server.gate.token}"):
            pass
        async with http.ws_connect(base + "/ws") as socket:
            message = await socket.receive(timeout=30)
            assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
