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
import uuid
from typing import Any

from tests.outside.scripted_api import Handler, ScriptedApi, text_of

TOOL = "exec_command"


class ScriptedResponses(ScriptedApi):
    path_suffix = "/v1"

    def __init__(self, command: str = "touch marker", **extra: Any) -> None:
        self.command = command
        self.extra = extra  # more arguments of the call (`sandbox_permissions`, `justification`)
        super().__init__()

    def tool_outputs(self) -> list[str]:
        """The output of every tool call the model was sent, as Codex wrote it."""
        return [text_of(item.get("output")) for body in self.kept() for item in _items(body)
                if item.get("type") == "function_call_output"]

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The one output item answering `body`."""
        outputs = [text_of(i.get("output")) for i in _items(body) if i.get("type") == "function_call_output"]
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

    def answer(self, handler: Handler, path: str, body: Any) -> None:
        if not path.rstrip("/").endswith("/responses") or not isinstance(body, dict):
            handler.send(404, "application/json", b'{"error": {"message": "not scripted"}}')
            return
        self.keep(body)
        response_id = f"resp_{uuid.uuid4().hex[:20]}"
        usage = {"input_tokens": 10, "input_tokens_details": None, "output_tokens": 5,
                 "output_tokens_details": None, "total_tokens": 15}
        handler.send_events([{"type": "response.created", "response": {"id": response_id}},
                             {"type": "response.output_item.done", "item": self.reply(body)},
                             {"type": "response.completed", "response": {"id": response_id, "usage": usage}}])


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    found = body.get("input")
    return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []
