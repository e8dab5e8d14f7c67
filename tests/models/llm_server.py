"""A local model server for the tests: OpenAI's `/v1/chat/completions` and Gemini's
`/v1beta/models/M:generateContent` wire formats, on a real socket on 127.0.0.1.

It answers from a queue of scripted turns (`Turn`), in order, whatever the request: a text
reply (streamed in the chunks given, or whole), tool calls, an HTTP error with headers, a hang
(the client's timeout), or a reply cut off mid-body. Every request is kept (`requests`), so a
test can check what the client sent (tool results, the budget notice, the key).

Run as a script (`python -m tests.models.llm_server`) it answers every request with a short
text reply and prints its port: the overhead benchmark's server, in a process of its own.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    text: str = ""
    chunks: list[str] | None = None  # streamed: the text in these pieces (default: 3 pieces)
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (name, args)
    usage: tuple[int, int] = (10, 5)  # prompt, completion tokens
    status: int = 200  # an error status: the body is the provider's error JSON
    headers: dict[str, str] = field(default_factory=dict)
    hang: float = 0.0  # seconds to wait before answering (a timeout on the client's side)
    cut: bool = False  # close the connection in the middle of the reply
    finish: str | None = None  # finish_reason; default stop / tool_calls
    message: str | None = None  # an error status's message (default: the provider's usual words)
    pause: float = 0.0  # seconds between streamed pieces (a reply that takes its time)


class ModelServer:
    """Start with `start()`, stop with `stop()`; `url` is the OpenAI base URL (`.../v1`)."""

    def __init__(self, turns: list[Turn] | None = None, *, default: Turn | None = None) -> None:
        self.turns: list[Turn] = list(turns or [])
        self.default = default  # answers when the queue is empty (else a 500 saying so)
        self.requests: list[dict[str, Any]] = []
        self.replied = threading.Event()  # a reply was written whole, or the client went away
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.model_server = self  # type: ignore[attr-defined]
        # A short poll: `stop()` waits for the serving loop to look (0.5 s by default, at every test's end).
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       name="model server", daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.root}/v1"

    def start(self) -> "ModelServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def push(self, *turns: Turn) -> None:
        with self.lock:
            self.turns.extend(turns)

    def next_turn(self, request: dict[str, Any]) -> Turn | None:
        with self.lock:
            self.requests.append(request)
            if self.turns:
                return self.turns.pop(0)
            return self.default

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up on a reply: not a test failure
            pass

    def do_POST(self) -> None:
        server: ModelServer = self.server.model_server  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        gemini = ":generateContent" in self.path or ":streamGenerateContent" in self.path
        request = {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}}
        turn = server.next_turn(request)
        try:
            self._answer(turn, gemini, body)
        finally:
            server.replied.set()

    def _answer(self, turn: Turn | None, gemini: bool, body: dict[str, Any]) -> None:
        if turn is None:
            return self._json(500, {"error": {"message": "the test server has no turn left", "type": "server_error"}})
        if turn.hang:
            time.sleep(turn.hang)
        if turn.status != 200:
            return self._error(turn, gemini)
        stream = ":streamGenerateContent" in self.path if gemini else bool(body.get("stream"))
        model = str(body.get("model", "test-model"))
        if gemini:
            return self._gemini_stream(turn) if stream else self._json(200, _gemini_body(turn), cut=turn.cut)
        if stream:
            return self._openai_stream(turn, model, bool((body.get("stream_options") or {}).get("include_usage")))
        return self._json(200, _openai_body(turn, model), cut=turn.cut)

    # -- plumbing -------------------------------------------------------------------------------

    def _json(self, status: int, payload: Any, *, headers: dict[str, str] | None = None, cut: bool = False) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if cut:  # half the body, then the connection goes away
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    def _error(self, turn: Turn, gemini: bool) -> None:
        message = turn.message or {401: "Incorrect API key provided", 429: "Rate limit reached, try again later",
                                   500: "The server had an error while processing your request"}.get(turn.status, "error")
        if gemini:
            status = {401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}.get(turn.status, "UNKNOWN")
            payload: dict[str, Any] = {"error": {"code": turn.status, "message": message, "status": status}}
        else:
            payload = {"error": {"message": message, "type": "test_error", "code": str(turn.status)}}
        self._json(turn.status, payload, headers=turn.headers)

    def _sse_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _sse(self, payload: Any) -> None:
        data = b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _sse_end(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _openai_stream(self, turn: Turn, model: str, include_usage: bool) -> None:
        self._sse_start()
        base = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
        pieces = _pieces(turn)
        for n, piece in enumerate(pieces):
            delta: dict[str, Any] = {"content": piece}
            if n == 0:
                delta["role"] = "assistant"
            self._sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            time.sleep(turn.pause)
            if turn.cut and n == len(pieces) // 2:
                self.close_connection = True  # no terminating chunk: the reply is cut off
                return
        for i, (name, args) in enumerate(turn.tool_calls):
            text = json.dumps(args)
            half = len(text) // 2
            self._sse({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": f"call_{i}", "type": "function",
                        "function": {"name": name, "arguments": text[:half]}}]}, "finish_reason": None}]})
            self._sse({**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": text[half:]}}]},
                        "finish_reason": None}]})
        finish = turn.finish or ("tool_calls" if turn.tool_calls else "stop")
        self._sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if include_usage:
            self._sse({**base, "choices": [], "usage": _openai_usage(turn)})
        self._sse(b"[DONE]")
        self._sse_end()

    def _gemini_stream(self, turn: Turn) -> None:
        self._sse_start()
        pieces = _pieces(turn)
        for n, piece in enumerate(pieces):
            self._sse({"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}]})
            if turn.cut and n == len(pieces) // 2:
                self.close_connection = True
                return
        last: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": _gemini_calls(turn) or [{"text": ""}]},
                                                "finishReason": turn.finish or "STOP", "index": 0}],
                                "usageMetadata": _gemini_usage(turn)}
        self._sse(last)
        self._sse_end()


def _pieces(turn: Turn) -> list[str]:
    if turn.chunks is not None:
        return list(turn.chunks)
    if not turn.text:
        return []
    third = max(1, len(turn.text) // 3)
    return [turn.text[i : i + third] for i in range(0, len(turn.text), third)]


def _openai_usage(turn: Turn) -> dict[str, int]:
    prompt, completion = turn.usage
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _openai_body(turn: Turn, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(turn.tool_calls)
        ]
    finish = turn.finish or ("tool_calls" if turn.tool_calls else "stop")
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": _openai_usage(turn)}


def _gemini_calls(turn: Turn) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": name, "args": args}} for name, args in turn.tool_calls]


def _gemini_usage(turn: Turn) -> dict[str, int]:
    prompt, completion = turn.usage
    return {"promptTokenCount": prompt, "candidatesTokenCount": completion, "totalTokenCount": prompt + completion}


def _gemini_body(turn: Turn) -> dict[str, Any]:
    parts = ([{"text": turn.text}] if turn.text else []) + _gemini_calls(turn)
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": turn.finish or "STOP", "index": 0}],
            "usageMetadata": _gemini_usage(turn), "modelVersion": "gemini-test"}


def main() -> None:
    """The benchmark's server: every request gets the same short reply, until killed."""
    server = ModelServer(default=Turn(text="ok", usage=(12, 1)))
    print(server.port, flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()
