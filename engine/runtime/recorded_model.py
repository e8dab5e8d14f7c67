"""A durable run's model: every model turn is a recorded step.

On recovery the turn's recorded response is replayed instead of asking the model again (a
finished turn is never repeated, scripted or real), and the scripted model's cursor is told which
reply the turn used, so later turns take the replies after it.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator

from google.adk.models import BaseLlm, LlmCapabilities, LlmRequest, LlmResponse

from engine.durable.steps import step

SCRIPT_MARK = "escalate_script"  # custom_metadata key: [agent, reply index] of a scripted reply


class RecordedModel(BaseLlm):
    inner: Any  # the BaseLlm answering live
    cursor: Any = None  # the run's ScriptCursor, for scripted replies

    @property
    def capabilities(self) -> LlmCapabilities:
        return self.inner.capabilities

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        live: list[LlmResponse] = []

        async def turn() -> list[dict[str, Any]]:
            recorded = []
            async for response in self.inner.generate_content_async(llm_request, stream=stream):
                live.append(response)
                recorded.append(response.model_dump(mode="json", exclude_none=True))
            return recorded

        recorded = await step("model turn", turn)
        # Live, the model's own responses go on, as in a run in memory (rebuilt from their JSON they
        # were validated again: ~180 Python calls a turn); replayed, the recorded ones.
        for response in live or [LlmResponse.model_validate(data) for data in recorded]:
            mark = (response.custom_metadata or {}).get(SCRIPT_MARK)
            if mark and self.cursor is not None:
                self.cursor.mark_used(str(mark[0]), int(mark[1]))
            yield response
