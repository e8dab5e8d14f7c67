"""A scripted Anthropic Messages API on 127.0.0.1, for the real Claude Code CLI (field notes:
"Agents we did not write, offline"): `POST /v1/messages` answered as server-sent events.

Its model calls one tool (`tool`, `tool_input`) on the first request that offers it, then, once
the conversation carries the tool's result (hooks' context may follow it), answers `RESULT: <the tool result's text>`: Claude
Code's final `result` says what happened to the call. Any other request (titles, summaries)
gets a short text. Every request body is kept in `requests`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.outside.scripted_api import Handler, ScriptedApi, text_of


class ScriptedModel(ScriptedApi):
    def __init__(self, tool: str = "Bash", tool_input: dict[str, Any] | None = None) -> None:
        self.tool = tool
        self.tool_input = tool_input or {"command": "touch marker", "description": "make the marker"}
        super().__init__()

    def tool_results(self) -> list[str]:
        """The text of every tool result the model was sent."""
        found = []
        for body in self.kept():
            for message in body.get("messages", []):
                content = message.get("content")
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        found.append(text_of(block.get("content")))
        return found

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks answering `body`."""
        results = [b for m in body.get("messages") or [] if isinstance(m, dict) and isinstance(m.get("content"), list)
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            return [{"type": "text", "text": "RESULT: " + " | ".join(text_of(r.get("content")) for r in results)}]
        offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if self.tool in offered:
            return [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": self.tool, "input": self.tool_input}]
        return [{"type": "text", "text": "ok"}]

    def answer(self, handler: Handler, path: str, body: Any) -> None:
        if not path.startswith("/v1/messages") or "count_tokens" in path or not isinstance(body, dict):
            handler.send_json({"input_tokens": 10})
            return
        self.keep(body)
        blocks = self.reply(body)
        if body.get("stream"):
            handler.send_events(_events(blocks))
        else:
            handler.send_json(_message(blocks))


def _events(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Messages API's stream of `blocks`."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": _message([])}]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events += [{"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                       {"type": "content_block_delta", "index": i,
                        "delta": {"type": "text_delta", "text": block["text"]}}]
        else:
            events += [{"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}},
                       {"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}]
        events.append({"type": "content_block_stop", "index": i})
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return events + [{"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                      "usage": {"output_tokens": 5}},
                     {"type": "message_stop"}]


def _message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant", "model": "claude-scripted",
            "content": blocks, "stop_reason": "end_turn" if blocks else None, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
