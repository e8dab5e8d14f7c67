"""A scripted OpenAI Responses API on 127.0.0.1, for the real Codex CLI (docs/outside.md, "Codex"):
`POST /v1/responses` answered as server-sent events (`response.created`,
`response.output_item.done`, `response.completed`), which Codex reads from a custom model
provider with `wire_api = "responses"`.

Its model calls Codex's shell tool (`exec_command`, `{"cmd": ...}`) on the first request that
offers it, then, once the conversation carries the call's output, answers `RESULT: <that
output>`: Codex's last message says what happened to the call. Every request body is kept in
`requests`.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL = "exec_command"


class ScriptedResponses:
    def __init__(self, command: str = "touch marker", **extra: Any) -> None:
        self.command = command
        self.extra = extra  # more arguments of the call (`sandbox_permissions`, `justification`)
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> "ScriptedResponses":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def tool_outputs(self) -> list[str]:
        """The output of every tool call the model was sent, as Codex wrote it."""
        with self.lock:
            requests = list(self.requests)
        return [_text_of(item.get("output")) for body in requests for item in _items(body)
                if item.get("type") == "function_call_output"]

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The one output item answering `body`."""
        outputs = [_text_of(i.get("output")) for i in _items(body) if i.get("type") == "function_call_output"]
        if outputs:
            text = "RESULT: " + " | ".join(outputs)
            return {"type": "message", "role": "assistant", "id": f"msg_{uuid.uuid4().hex[:20]}",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
        offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if TOOL in offered:
            return {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:20]}",
                    "call_id": f"call_{uuid.uuid4().hex[:20]}", "name": TOOL,
                    "arguments": json.dumps({"cmd": self.command, **self.extra})}
        return {"type": "message", "role": "assistant", "id": f"msg_{uuid.uuid4().hex[:20]}",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                if not self.path.rstrip("/").endswith("/responses") or not isinstance(body, dict):
                    self._send(404, "application/json", b'{"error": {"message": "not scripted"}}')
                    return
                with model.lock:
                    model.requests.append(body)
                response_id = f"resp_{uuid.uuid4().hex[:20]}"
                usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
                         "output_tokens_details": None, "total_tokens": 15}
                events = [{"type": "response.created", "response": {"id": response_id}},
                          {"type": "response.output_item.done", "item": model.reply(body)},
                          {"type": "response.completed", "response": {"id": response_id, "usage": usage}}]
                self._send(200, "text/event-stream",
                           b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events))

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = body.get("input")
    return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""
