"""A scripted Anthropic Messages API on 127.0.0.1, enough for Claude Code: `python fake_anthropic.py
PORT_FILE LOG_FILE`. A request whose last message carries a tool result gets a text reply; any
other request that offers a Bash tool (Claude Code's, or its ACP adapter's `mcp__acp__Bash`) gets one `tool_use` of it; anything else (titles,
summaries) a short text. Streamed (server-sent events) or not, as asked. Every request's path and
the tools and last message it carried are appended to LOG_FILE, one JSON line each."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMAND = "echo escalated > approved.txt"


def reply_for(body: dict, path: str) -> list[dict]:
    messages = body.get("messages") or [{}]
    last = messages[-1].get("content")
    parts = last if isinstance(last, list) else []
    if any(isinstance(p, dict) and p.get("type") == "tool_result" for p in parts):
        result = next(p for p in parts if p.get("type") == "tool_result")
        return [{"type": "text", "text": f"Finished. The tool said: {json.dumps(result.get('content'))[:200]}"}]
    bash = next((t["name"] for t in body.get("tools") or [] if str(t.get("name", "")).split("__")[-1] == "Bash"), None)
    if bash is not None and "count_tokens" not in path:  # Claude Code's own, or its ACP adapter's mcp__acp__Bash
        return [{"type": "tool_use", "id": "toolu_01", "name": bash,
                 "input": {"command": COMMAND, "description": "Write the approval marker", "timeout": 60000}}]
    return [{"type": "text", "text": "ok"}]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        blocks = reply_for(body, self.path)
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"path": self.path, "tools": [t.get("name") for t in body.get("tools") or []],
                                "reply": [b["type"] for b in blocks]}) + "\n")
        stop = "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn"
        message = {"id": "msg_01", "type": "message", "role": "assistant", "model": body.get("model", "claude"),
                   "content": [], "stop_reason": None, "stop_sequence": None,
                   "usage": {"input_tokens": 10, "output_tokens": 1}}
        if not body.get("stream"):
            self._send("application/json", json.dumps({**message, "content": blocks, "stop_reason": stop}).encode())
            return
        events = [("message_start", {"type": "message_start", "message": message})]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}),
                           ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "text_delta", "text": block["text"]}})]
            else:
                events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {**block, "input": {}}}),
                           ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": {"type": "input_json_delta",
                                                              "partial_json": json.dumps(block["input"])}})]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 5}}),
                   ("message_stop", {"type": "message_stop"})]
        self._send("text/event-stream", b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events))

    def do_GET(self) -> None:  # noqa: N802
        self._send("application/json", b"{}")

    def do_HEAD(self) -> None:  # noqa: N802
        self._send("application/json", b"")

    def _send(self, kind: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Path(sys.argv[1]).write_text(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    main()
