"""What the scripted model APIs of tests/outside share: an HTTP server on 127.0.0.1 in a thread,
every request body kept, and the text of a tool result as either API nests it. A subclass answers
its API's requests: `answer(handler, path, body)`."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedApi:
    path_suffix = ""  # what `url` ends with: the base URL the agent's settings take

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # A short poll: `stop()` waits for the serving loop to look (0.5 s by default).
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.path_suffix}"

    def start(self) -> "ScriptedApi":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def keep(self, body: dict[str, Any]) -> None:
        with self.lock:
            self.requests.append(body)

    def kept(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.requests)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class _Handler(Handler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                api.answer(self, self.path, body)  # type: ignore[attr-defined]  # the subclass's

        return _Handler


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, payload: dict[str, Any]) -> None:
        self.send(200, "application/json", json.dumps(payload).encode())

    def send_events(self, events: list[dict[str, Any]]) -> None:
        """Server-sent events, each named by its `type`."""
        self.send(200, "text/event-stream",
                  b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events))


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
