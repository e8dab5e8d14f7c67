"""The gate of `escalate serve`, on real servers on 127.0.0.1: the token, the cookie, the page's
one-time secret, the key only the page's script holds, the pinned Host and Origin. Consoles here
are small processes that live until told to quit (or exit at once): no Textual is started."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from yarl import URL

from tui.web.gate import COOKIE, KEY_PROTOCOL, TokenGate
from tui.web.server import NOTICE, REFUSED, ConsoleServer

NEVER = [sys.executable, "-c", "raise SystemExit('no console may start in these tests')"]
# A console that lives until the server's quit message (textual-serve's packets on its stdin).
LINGER = [sys.executable, "-c", "import sys\ndata = b''\nwhile b'quit' not in data:\n"
          "    chunk = sys.stdin.buffer.read1(65536)\n    if not chunk: break\n    data += chunk\n"]
SOCKET_URL = re.compile(r'data-session-websocket-url="([^"]+)"')
KEY = re.compile(r'data-key="([A-Za-z0-9_-]{43})"')


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
    when told to). Like a browser's, the jar sends them to every port of the host."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def refused(http: aiohttp.ClientSession, url: str, **headers: str) -> None:
    async with http.get(url, allow_redirects=False, headers=headers) as response:
        assert response.status == 403, url
        assert await response.text() == REFUSED  # nothing of the console, whatever was asked
        assert COOKIE not in response.cookies


async def open_link(http: aiohttp.ClientSession, server: ConsoleServer, base: str) -> str:
    """What the page script does with the link: the key it keeps in localStorage."""
    async with http.get(f"{base}/?token={server.gate.token}", allow_redirects=False) as response:
        assert response.status == 200
        (key,) = KEY.findall(await response.text())
        return key


async def socket_url(http: aiohttp.ClientSession, base: str) -> str:
    """The websocket URL of a freshly served page (it holds the page's one-time secret)."""
    async with http.get(base + "/") as page:
        assert page.status == 200
        (url,) = SOCKET_URL.findall(await page.text())
        return url


async def ws_refused(http: aiohttp.ClientSession, url: str, **kwargs) -> None:
    with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
        await http.ws_connect(url, **kwargs)
    assert handshake.value.status == 403, url


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
            assert response.status == 200  # the page script keeps the key, then goes to / (tested in Chromium)
            body = await response.text()
            assert '<script src="/escalate.js"></script>' in body and server.gate.token not in body
            cookie = response.cookies[COOKIE]
            assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/"
            assert cookie.value != server.gate.token and cookie.value not in body  # the key is not the cookie
            assert response.headers["Cache-Control"] == "no-store"
        async with first.get(base + "/") as page:
            assert page.status == 200
            body = await page.text()
            assert re.search(r'data-session-websocket-url="ws://127\.0\.0\.1:\d+/ws/[A-Za-z0-9_-]{43}"', body)
            assert server.gate.token not in body and KEY.search(body) is None
            assert page.headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
            assert page.headers["Referrer-Policy"] == "no-referrer" and page.headers["Cache-Control"] == "no-store"
        async with first.get(base + "/static/js/textual.js") as script:
            assert script.status == 200 and len(await script.read()) > 100_000
        async with first.get(base + "/escalate.js") as script:
            assert script.status == 200 and script.content_type == "text/javascript"
        async with first.get(base + "/", headers={"X-Forwarded-Proto": "https"}) as proxied:
            assert 'data-session-websocket-url="wss://127.0.0.1:' in await proxied.text()  # behind a TLS proxy
        async with first.get(link) as again:  # the same browser, the link again: still in (by its cookie)
            assert again.status == 200

        await refused(second, link)  # another browser: the token is spent
        await refused(second, base + "/")


async def test_the_host_the_link_was_opened_at_is_pinned() -> None:
    server = ConsoleServer("127.0.0.1", 0, lambda: NEVER)
    port = await server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        async with client() as http:
            proxy = 'proxy.example"><b'  # a Host header as a proxy passes it: escaped in the page
            async with http.get(f"{base}/?token={server.gate.token}", headers={"Host": proxy}) as response:
                assert response.status == 200
            async with http.get(base + "/", headers={"Host": proxy, "X-Forwarded-Proto": "https"}) as page:
                assert 'data-session-websocket-url="wss://proxy.example&quot;&gt;&lt;b/ws/' in await page.text()
            # The cookie at any other name of this server (127.0.0.1 itself, a name rebound by DNS): nothing.
            for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"rebound.example:{port}", "proxy.example"):
                await refused(http, base + "/", Host=host)
                await refused(http, base + "/static/js/textual.js", Host=host)
    finally:
        await server.stop()


async def test_a_stolen_or_forged_cookie_and_a_foreign_page_are_refused(served) -> None:
    server, base = served
    async with client() as http:
        key = await open_link(http, server, base)
        session = http.cookie_jar.filter_cookies(URL(base))[COOKIE].value
        # A page of another site opening the websocket with this browser's cookie, page secret and
        # key (as if it had them all): its Origin is not this server's.
        for origin in ("http://evil.example", f"{base}.evil.example", base.replace("http:", "https:"), None):
            headers = {"Origin": origin} if origin else {}
            await ws_refused(http, await socket_url(http, base), protocols=(KEY_PROTOCOL + key,), headers=headers)
    for forged in (session + "x", session[:-1], "", "é" * 43, session.upper()):
        async with aiohttp.ClientSession(headers={"Cookie": f"{COOKIE}={forged}"}) as http:
            await refused(http, base + "/")


async def test_a_server_on_another_port_that_gets_the_cookie_opens_nothing() -> None:
    """Finding 7: a cookie carries no port. The browser that opened the link visits another
    local server; that server replays everything it received, and everything a page of its own
    can learn, to the console: no console opens, no key reaches one."""
    server = ConsoleServer("127.0.0.1", 0, lambda: LINGER)
    port = await server.start()
    base = f"http://127.0.0.1:{port}"
    tried: list[tuple[str, int]] = []

    async def steal(request: web.Request) -> web.Response:
        cookie = request.headers.get("Cookie", "")
        assert f"{COOKIE}=" in cookie  # the browser did send it here
        async with aiohttp.ClientSession(headers={"Cookie": cookie}) as replay:
            url = await socket_url(replay, base)  # the page loads with the cookie: its secret is in it
            others = [url, url.replace("/ws/", "/ws/x"), f"ws://127.0.0.1:{port}/ws", f"ws://127.0.0.1:{port}/ws/"]
            origins = [f"http://127.0.0.1:{request.url.port}", base, None]  # its own, the console's (forged), none
            for target in others:
                for origin in origins:
                    for protocols in ((), (KEY_PROTOCOL + "none",), (KEY_PROTOCOL + cookie.split("=", 1)[1],)):
                        headers = {"Origin": origin} if origin else {}
                        try:
                            async with replay.ws_connect(target, headers=headers, protocols=protocols) as socket:
                                await socket.send_json(["stdin", "1"])
                                tried.append((target, 101))
                        except aiohttp.WSServerHandshakeError as exc:
                            tried.append((target, exc.status))
        return web.Response(text="thanks")

    attacker = web.Application()
    attacker.router.add_get("/", steal)
    runner = web.AppRunner(attacker, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        async with client() as browser:
            key = await open_link(browser, server, base)
            async with browser.get(f"http://127.0.0.1:{runner.addresses[0][1]}/") as visit:
                assert visit.status == 200, await visit.text()
            # 403, or 404 for a path that is no websocket here: never a console (101)
            assert len(tried) == 4 * 3 * 3 and {status for _, status in tried} <= {403, 404}, tried
            assert not server._sessions  # no console was started for any of it
            # The real page, with its key and a fresh page secret, still opens.
            url = await socket_url(browser, base)
            async with browser.ws_connect(url, protocols=(KEY_PROTOCOL + key,), headers={"Origin": base}) as socket:
                assert socket.protocol == KEY_PROTOCOL + key
            await ws_refused(browser, url, protocols=(KEY_PROTOCOL + key,), headers={"Origin": base})  # once per page
    finally:
        await runner.cleanup()
        await server.stop()


async def test_every_open_page_is_told_when_another_browser_session_opens() -> None:
    server = ConsoleServer("127.0.0.1", 0, lambda: LINGER)
    port = await server.start()
    base = f"http://127.0.0.1:{port}"
    try:
        async with client() as http:
            key = await open_link(http, server, base)
            options = {"protocols": (KEY_PROTOCOL + key,), "headers": {"Origin": base}}
            async with http.ws_connect(await socket_url(http, base), **options) as first:
                async with http.ws_connect(await socket_url(http, base), **options) as second:
                    told = await first.receive_json(timeout=30)
                    assert told[0] == NOTICE and told[1].startswith("Browser session 2 opened at ")
                    assert "(2 open now)" in told[1] and "stop `escalate serve`" in told[1]
                    assert await second.receive_json(timeout=30) == [NOTICE, "This is browser session 2; 1 other(s) open."]
    finally:
        await server.stop()


async def test_sessions_beyond_the_limit_are_refused_not_queued() -> None:
    server = ConsoleServer("127.0.0.1", 0, lambda: NEVER, max_sessions=0)
    port = await server.start()
    try:
        async with client() as http:
            base = f"http://127.0.0.1:{port}"
            key = await open_link(http, server, base)
            with pytest.raises(aiohttp.WSServerHandshakeError) as handshake:
                await http.ws_connect(await socket_url(http, base), protocols=(KEY_PROTOCOL + key,),
                                      headers={"Origin": base})
            assert handshake.value.status == 503
    finally:
        await server.stop()


async def test_a_console_that_fails_to_start_ends_the_page_s_session(served) -> None:
    server, base = served  # its consoles exit at once, as a broken install would
    async with client() as http:
        key = await open_link(http, server, base)
        async with http.ws_connect(await socket_url(http, base), protocols=(KEY_PROTOCOL + key,),
                                   headers={"Origin": base}) as socket:
            message = await socket.receive(timeout=30)
            assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
