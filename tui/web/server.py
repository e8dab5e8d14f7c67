"""The web server of `escalate serve`: one page, its static files, its script and a websocket
per browser session, all behind the TokenGate (tui/web/gate.py: the cookie loads the page; the
websocket needs the page's one-time secret and the key only this origin's script holds). Each
websocket runs the console in a process of its own (textual-serve's AppService: Textual's web
driver, the terminal drawn by xterm.js in the page), so every session is a whole console on the
shared database; the pages already open are told when another opens.

textual-serve's own Server is not used: its routes (the page, a file index, downloads) have no
place for the gate, its page loads a font from a third-party host, and its websocket URL is
fixed at start (wrong for a browser on another machine when listening on 0.0.0.0).
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import shlex
import string
import time
from contextlib import suppress
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Awaitable, Callable

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from engine.text_safety import visible
from tui.web.gate import COOKIE, KEY_PROTOCOL, Admission, TokenGate

log = logging.getLogger("escalate.serve")

MAX_SESSIONS = 4  # consoles at once (a process each, ~150 MB): more tabs are refused, not queued
MAX_MESSAGE = 64 * 1024  # bytes: a key press or a paste, never more
STOP_GRACE = 15.0  # seconds the consoles get to quit when the server stops (a loaded host: several)
TERMINAL_SIZE = (20, 500)  # cells, either way: the sizes a browser may ask for

REFUSED = ("This escalate console needs the one-time link printed by `escalate serve`.\n"
           "A link works once, in one browser; restart `escalate serve` for a new one.\n")
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",  # a framed console could be fed key presses (clickjacking)
    # textual.js inserts its own <style> elements; everything else comes from this server.
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                "font-src 'self'; img-src 'self' data:; connect-src 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
}
STATIC = Path(str(files("textual_serve") / "static"))
HERE = Path(__file__).parent
NOTICE = "escalate-notice"  # a text frame ["escalate-notice", text]: the page shows it above the console


@dataclass
class ConsoleServer:
    """Serves the console at `host:port`; `command()` gives the command line of each new
    browser session's console process."""

    host: str
    port: int
    command: Callable[[], list[str]]
    gate: TokenGate = field(default_factory=TokenGate)
    title: str = "escalate"
    max_sessions: int = MAX_SESSIONS
    _runner: web.AppRunner | None = field(default=None, init=False)
    _sessions: dict[web.WebSocketResponse, AppService] = field(default_factory=dict, init=False)
    _opened: int = field(default=0, init=False)

    async def start(self) -> int:
        """Listen; returns the port (the one chosen when `port` is 0). OSError if it cannot."""
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._page)
        app.router.add_get("/escalate.js", self._script)
        app.router.add_get("/ws/{page}", self._session)
        app.router.add_static("/static", STATIC)
        app.router.add_get("/focus.js", lambda _: web.FileResponse(Path(__file__).parent / "focus.js"))  # keys to the terminal
        app.on_shutdown.append(self._close_sessions)
        # No access log: the first request's URL holds the token.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=STOP_GRACE)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except BaseException:
            await self._runner.cleanup()
            raise
        return int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        """Every console quits (its runs stay in the database; each is waited for, up to
        STOP_GRACE), which ends its page's session; then the server stops listening."""
        if self._runner is None:
            return
        quitting = [asyncio.ensure_future(console.stop()) for console in self._sessions.values()]
        if quitting:
            await asyncio.wait(quitting, timeout=STOP_GRACE)
        await self._runner.cleanup()

    # ---- the gate ------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if self.gate.admits(request.cookies.get(COOKIE), request.host):
            if request.path.startswith("/ws/") and request.headers.get("Origin") != self._origin(request):
                return _refused()
            response = await handler(request)
        elif (request.path == "/" and "token" in request.query
              and (admission := self.gate.exchange(request.query["token"], request.host))):
            response = _link_page(admission)
            # The token is spent; the cookie loads the page from now on, in this browser only.
            response.set_cookie(COOKIE, admission.session, path="/", httponly=True, samesite="Strict")
            log.info("the one-time link was used: this server now answers that browser only, at %s",
                     visible(request.host))
        else:
            return _refused()
        if not response.prepared:  # a websocket has already sent its headers
            response.headers.update(SECURITY_HEADERS)
        return response

    @staticmethod
    def _origin(request: web.Request) -> str:
        """This server's origin as the page's browser names it (behind a TLS proxy: https)."""
        secure = request.secure or request.headers.get("X-Forwarded-Proto") == "https"
        return f"{'https' if secure else 'http'}://{request.host}"

    # ---- the page --------------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        scheme = "wss" if self._origin(request).startswith("https:") else "ws"
        values = {"title": self.title, "static": "/static", "font_size": _int(request.query.get("fontsize"), 16, 8, 48),
                  "websocket": f"{scheme}://{request.host}/ws/{self.gate.new_page()}"}
        page = _PAGE.substitute({name: html.escape(str(value), quote=True) for name, value in values.items()})
        return web.Response(text=page, content_type="text/html")

    async def _script(self, _request: web.Request) -> web.Response:
        return web.Response(text=_SCRIPT, content_type="text/javascript")

    # ---- a browser session: one console process ----------------------------------------------

    async def _session(self, request: web.Request) -> web.StreamResponse:
        protocol = _offered_key(request)
        if not self.gate.opens(request.match_info["page"], protocol and protocol[len(KEY_PROTOCOL):]):
            return _refused()
        if len(self._sessions) >= self.max_sessions:
            return web.Response(status=503, text=f"at most {self.max_sessions} browser sessions at once\n")
        # The browser requires its subprotocol echoed; it is the key it sent, so nothing new leaves.
        socket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE, protocols=(protocol,))
        await socket.prepare(request)
        self._opened += 1
        number = self._opened
        await self._announce(socket, number)
        width = _int(request.query.get("width"), 80, *TERMINAL_SIZE)
        height = _int(request.query.get("height"), 24, *TERMINAL_SIZE)
        # `exec`: the console replaces the shell AppService starts it with (no shell left between
        # them holding its pipes, and signals reach the console itself).
        console = _Console("exec " + shlex.join(self.command()), write_bytes=socket.send_bytes,
                           write_str=socket.send_str, close=socket.close, download_manager=DownloadManager())
        self._sessions[socket] = console
        log.info("browser session %d: console opened", number)
        try:
            await console.start(width, height)
            await _relay(socket, console)
        finally:
            self._sessions.pop(socket, None)
            await console.stop()  # the console quits; its runs stay in the database
            log.info("browser session %d: console closed", number)
        return socket

    async def _announce(self, opened: web.WebSocketResponse, number: int) -> None:
        """Every page already open is told that another browser session opened (someone else may
        have this browser's secrets); the new page is told how many others are open."""
        others = [socket for socket in self._sessions if socket is not opened]
        if not others:
            return
        at = time.strftime("%H:%M:%S")
        told = f"Browser session {number} opened at {at} ({len(others) + 1} open now). If it is not yours, stop `escalate serve`."
        for socket in others:
            with suppress(ConnectionError, RuntimeError):  # a page closing meanwhile
                await socket.send_json([NOTICE, told])
        with suppress(ConnectionError, RuntimeError):
            await opened.send_json([NOTICE, f"This is browser session {number}; {len(others)} other(s) open."])

    async def _close_sessions(self, _app: web.Application) -> None:
        await asyncio.gather(*(socket.close() for socket in list(self._sessions)), return_exceptions=True)


class _Console(AppService):
    """A console process of one browser session. Its page is told when the console ends, however
    it ends: AppService closes the websocket only on the exit message a console sends when it
    quits normally, and a console that failed to start or crashed would leave the page waiting."""

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            await self.remote_close()


async def _relay(socket: web.WebSocketResponse, console: AppService) -> None:
    """The browser's messages to the console, until the browser goes (textual.js's protocol:
    `["stdin", text]`, `["resize", {width, height}]`, `["ping", x]`, `["focus"]`, `["blur"]`).
    Anything else is dropped."""
    async for message in socket:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            envelope = json.loads(message.data)
        except ValueError:
            continue
        if not isinstance(envelope, list) or not envelope:
            continue
        kind, data = envelope[0], (envelope[1] if len(envelope) > 1 else None)
        if kind == "stdin" and isinstance(data, str):
            await console.send_bytes(data.encode("utf-8", "replace"))
        elif kind == "resize" and isinstance(data, dict):
            await console.set_terminal_size(_int(data.get("width"), 80, *TERMINAL_SIZE),
                                            _int(data.get("height"), 24, *TERMINAL_SIZE))
        elif kind == "ping":
            await socket.send_json(["pong", data])
        elif kind == "focus":
            await console.focus()
        elif kind == "blur":
            await console.blur()


def _int(value: object, default: int, low: int, high: int) -> int:
    """A number from the browser, within [low, high]; `default` when it is not one."""
    try:
        number = int(str(value))
    except ValueError:
        return default
    return max(low, min(high, number))


def _offered_key(request: web.Request) -> str | None:
    """The page script's key subprotocol, if it offered one."""
    offered = (p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(","))
    return next((p for p in offered if p.startswith(KEY_PROTOCOL)), None)


def _link_page(admission: Admission) -> web.Response:
    """The answer to the link: the page script keeps the key in this origin's localStorage and
    goes on to `/` (the token leaves the address bar and the history)."""
    return web.Response(text=_LINK.substitute(key=html.escape(admission.key, quote=True)), content_type="text/html")


def _refused() -> web.Response:
    return web.Response(status=403, text=REFUSED, headers=SECURITY_HEADERS)


_PAGE = string.Template((HERE / "page.html").read_text(encoding="utf-8"))
_LINK = string.Template((HERE / "link.html").read_text(encoding="utf-8"))
_SCRIPT = (HERE / "escalate.js").read_text(encoding="utf-8")
