"""The offline model: an ADK `BaseLlm` that answers each agent from the `--script` file.

Each model turn of an agent takes its first unused reply whose `when` matches the agent's latest
input (the last user message or tool result in the request). Runs keep separate cursors, so two
runs of one workflow replay the same script independently.
"""

from __future__ import annotations

import functools
import json
from typing import Any, AsyncGenerator

from google.adk.models import BaseLlm, LlmCapabilities, LlmRequest, LlmResponse
from google.genai import types

from engine.runtime.script import Reply
from engine.runtime.script_cursor import ScriptCursor, ScriptExhausted

__all__ = ["ScriptCursor", "ScriptExhausted", "ScriptedModel", "latest_input", "reply_content", "scripted_model"]


# ADK shows a delegate what other agents did as user-role "For context:" transcripts; those are
# not input the agent received, so `when` looks past them to the real message.
_ADK_TRANSCRIPT = "For context:"

# The scripted model's name, `<provider>/<model>` as LiteLLM's ids: ADK's telemetry reads the
# provider from it at each turn (twice), where a bare name made it work out Gemini's deployment
# from the environment (~60 Python calls a turn), to report the scripted model as Gemini.
SCRIPTED = "escalate/scripted"


def latest_input(request: LlmRequest) -> str:
    """The text of the most recent user message or tool result the model is shown."""
    for content in reversed(request.contents or []):
        if content.role == "model":
            continue
        if content.parts and (content.parts[0].text or "").startswith(_ADK_TRANSCRIPT):
            continue
        texts: list[str] = []
        for part in content.parts or []:
            if part.text:
                texts.append(part.text)
            elif part.function_response is not None:
                texts.append(json.dumps(part.function_response.response, default=str, ensure_ascii=False))
        if texts:
            return "\n".join(texts)
    return ""


@functools.lru_cache(maxsize=256)
def _usage(prompt: int, output: int) -> types.GenerateContentResponseUsageMetadata:
    """The script's `usage:` (budgets tested offline), else zeros: ADK warns once per call
    without. One object for each pair (~80 Python calls a turn to build; nothing in ADK or
    escalate changes a response's usage, they read it)."""
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=prompt, candidates_token_count=output, total_token_count=prompt + output
    )


def reply_content(reply: Reply, cursor: ScriptCursor, agent: str) -> types.Content:
    """The model turn a scripted reply stands for (a tool call's id drawn only for a tool call)."""
    if reply.kind == "tool":
        call = types.FunctionCall(name=reply.tool, args=dict(reply.args), id=cursor.call_id(agent))
        return types.Content(role="model", parts=[types.Part(function_call=call)])
    if reply.kind == "escalate":
        text = json.dumps({"escalation": True, **reply.escalation}, ensure_ascii=False, default=str)
    else:
        text = reply.text
    return types.Content(role="model", parts=[types.Part.from_text(text=text)])


class ScriptedModel(BaseLlm):
    """Answers one agent from its run's ScriptCursor."""

    agent_name: str
    cursor: Any  # ScriptCursor (kept Any: pydantic field on an arbitrary class)

    @property
    def capabilities(self) -> LlmCapabilities:
        return LlmCapabilities(output_schema_and_tools=True)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        index, reply = self.cursor.next_reply(self.agent_name, latest_input(llm_request))
        content = reply_content(reply, self.cursor, self.agent_name)
        yield LlmResponse(content=content, usage_metadata=_usage(*reply.usage), turn_complete=True,
                          custom_metadata={"escalate_script": [self.agent_name, index]})


def scripted_model(agent: str, cursor: ScriptCursor) -> ScriptedModel:
    return ScriptedModel(model=SCRIPTED, agent_name=agent, cursor=cursor)
