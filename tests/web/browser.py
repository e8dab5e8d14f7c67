"""A real headless Chromium (Debian's, never a downloaded one) driven by Playwright, and what it
shows of the console: the bytes the page's xterm.js draws, replayed on a VT100 screen (pyte),
since xterm.js paints on a canvas that has no text to read."""

from __future__ import annotations

import codecs
import json
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pyte

CHROMIUM = "/usr/bin/chromium"
# --disable-dev-shm-usage: a container's /dev/shm is often 64 MB, too small for a renderer's
# shared memory (the tab crashes); Chromium then keeps it in /tmp.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1280, "height": 800}


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


class Terminal:
    """The console as the page draws it: every byte the page's websocket received, on a
    screen of the size the page asked for."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.screen = pyte.Screen(80, 24)
        self.stream = pyte.Stream(self.screen)
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        self.socket: Any = None
        self.closed = False
        page.on("websocket", self._opened)

    def _opened(self, socket: Any) -> None:
        self.socket = socket
        query = parse_qs(urlsplit(socket.url).query)
        self.screen.resize(int(query["height"][0]), int(query["width"][0]))
        socket.on("framereceived", self._received)
        socket.on("framesent", self._sent)
        socket.on("close", lambda _: setattr(self, "closed", True))

    def _received(self, payload: Any) -> None:
        if isinstance(payload, bytes):  # the terminal's output; text frames are meta (pong, ...)
            self.stream.feed(self._decode(payload))

    def _sent(self, payload: Any) -> None:
        message = json.loads(payload) if isinstance(payload, str) else None
        if isinstance(message, list) and message and message[0] == "resize":
            self.screen.resize(message[1]["height"], message[1]["width"])

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, *needles: str, timeout: float = 120) -> float:
        """Waits until the screen shows every needle; returns when (time.monotonic())."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.text()
            if all(needle in shown for needle in needles):
                return time.monotonic()
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {needles!r}; it shows:\n{shown}")
            self.page.wait_for_timeout(10)  # Playwright delivers the frames while it waits

    def press(self, key: str) -> None:
        """A key typed into the terminal (xterm.js's input field has the keyboard)."""
        self.page.focus(".xterm-helper-textarea")
        self.page.keyboard.press(key)
