"""A real model's turn, made dependable: a failed turn is retried under the agent's `retry`
policy (with its backoff, or longer when the server says Retry-After), and what finally fails
is one line naming the model and the cause (engine/runtime/model_errors.py).

A turn is retried here, where it failed, and not by calling the agent again: the call's earlier
turns, tool calls and human decisions are never repeated. A turn's responses are collected
before they are handed on, so a reply cut off half-way is retried whole, never half-shown.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator, Callable

from google.adk.models import BaseLlm, LlmCapabilities, LlmRequest, LlmResponse

from engine.runtime.backoff import backoff_delay
from engine.runtime.model_errors import ModelCallError, classify, reply_failure

MAX_SERVER_WAIT = 120.0  # seconds: a longer Retry-After is capped (the agent's timeout still applies)


class RealModel(BaseLlm):
    inner: Any  # the provider's BaseLlm (LiteLlm, Gemini)
    label: str  # "model 'main' (openai/gpt-4o)"
    retries: int = 0  # the agent's retry policy: further attempts after the first
    backoff: str | None = None  # its backoff: exponential, linear, fixed
    on_retry: Callable[[str], None] = lambda message: None  # the run's log line

    @property
    def capabilities(self) -> LlmCapabilities:
        return self.inner.capabilities

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        attempt = 0
        while True:
            try:
                responses = await self._turn(llm_request, stream)
                break
            except ModelCallError as exc:
                error = exc
            except Exception as exc:  # not a cancellation (the agent's timeout): that is a BaseException
                error = ModelCallError(self.label, classify(exc))
            failure = error.failure
            if not failure.retryable or attempt >= self.retries:
                raise error from None
            delay = max(backoff_delay(self.backoff, attempt), min(failure.retry_after or 0.0, MAX_SERVER_WAIT))
            attempt += 1
            self.on_retry(f"{error}; retry {attempt} of {self.retries} in {delay:g} s")
            await asyncio.sleep(delay)
        for response in responses:
            yield response

    async def _turn(self, llm_request: LlmRequest, stream: bool) -> list[LlmResponse]:
        responses = [r async for r in self.inner.generate_content_async(llm_request, stream=stream)]
        for response in responses:
            failure = reply_failure(response)
            if failure is not None:
                raise ModelCallError(self.label, failure)
        return responses
