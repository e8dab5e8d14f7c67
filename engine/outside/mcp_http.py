"""`escalate mcp --http`: the MCP server over streamable HTTP, behind the one-time token.

The gate is `escalate serve`'s (engine/token_gate.py): the printed URL carries a random token
(`?token=`, or the same value as `Authorization: Bearer`); its first use is exchanged for a
session cookie (HttpOnly, SameSite=Strict) and pins the address it was used at; every later
request must carry that cookie and name that address. The token is then spent: a second client,
or the same URL used again without the cookie, is refused (401), as is a request without it.
A client that keeps no cookies (most browser-less clients keep them for their connection) works
once: use stdio for it. The SDK's own checks stay on (Host and Origin of a loopback address).
"""

from __future__ import annotations

import json
import signal
import socket
from http.cookies import CookieError, SimpleCookie
from typing import TYPE_CHECKING, Any, Awaitable, Callable
from urllib.parse import parse_qs

from engine.token_gate import OneTimeToken

if TYPE_CHECKING:
    from mcp.server import Server

COOKIE = "escalate_mcp_session"  # not serve's: a cookie carries no port, the two may share a host
PATH = "/mcp"
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_SECONDS = 2.0  # on stop, open calls get this long before they are cancelled (and withdrawn)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class TokenGateApp:
    """ASGI middleware: only the client that used the token first, at that address."""

    def __init__(self, app: App, once: OneTimeToken) -> None:
        self.app = app
        self.once = once

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket: nothing here speaks it
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if self.once.admits(_cookie(headers.get("cookie", "")), host):
            await self.app(scope, receive, send)
            return
        offered = _offered_token(scope, headers)
        session = self.once.exchange(offered, host) if offered else None
        if session is None:
            await _refuse(send)
            return

        async def with_cookie(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                cookie = f"{COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict".encode("ascii")
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", cookie)]}
            await send(message)

        await self.app(scope, receive, with_cookie)


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers (the first of each name), decoded as HTTP allows (latin-1)."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _cookie(header: str) -> str | None:
    try:
        jar = SimpleCookie(header)
    except CookieError:  # a hostile header: no session
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def _offered_token(scope: Scope, headers: dict[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip()
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[0] if values else None


async def _refuse(send: Send) -> None:
    body = json.dumps({"error": "escalate mcp: this needs the URL printed when the server started "
                                "(its token works once, for one client)"}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def listen(host: str, port: int) -> socket.socket:
    """The listening socket (bound now, so that port 0 gives the port to print). Raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


async def serve_http(server: "Server[Any]", sock: socket.socket, host: str, once: OneTimeToken) -> None:
    """Serve until SIGTERM, SIGINT or SIGHUP: open calls are then cancelled, and this returns."""
    import uvicorn

    app = TokenGateApp(server.streamable_http_app(streamable_http_path=PATH, host=host), once)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=GRACE_SECONDS,
                            access_log=False)
    web = uvicorn.Server(config)

    def stop(signum: int, frame: object) -> None:
        web.should_exit = True

    # uvicorn handles SIGINT and SIGTERM itself while it serves, then raises the signal again
    # for the handler it found: this one, so that the command ends with exit 0, not killed.
    previous = {sig: signal.signal(sig, stop) for sig in STOP_SIGNALS}
    try:
        await web.serve(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
