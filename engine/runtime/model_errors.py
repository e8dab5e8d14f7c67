"""A real model's failure in one line: what went wrong, whether trying again can help, and how
long the server asked us to wait.

LiteLLM, the OpenAI client, google.genai, httpx and aiohttp each wrap the others' exceptions
(a refused connection reaches us as a LiteLLM "500"), so the whole cause chain is read: the
transport's own error decides first, then the HTTP status. Server text is someone else's: it
is cut to one short, printable line.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from dataclasses import dataclass
from typing import Any

from engine.text_safety import visible

MAX_DETAIL = 160  # characters of the server's own message kept in the line
MAX_CHAIN = 12  # causes looked at (a chain is short; a cycle must not loop)

# Transport failures by exception class name (their modules are optional: not imported here).
_UNREACHABLE = {"ConnectError", "ClientConnectorError", "ConnectionRefusedError", "ClientConnectorDNSError",
                "gaierror", "ConnectTimeout"}
_CUT_OFF = {"ReadError", "RemoteProtocolError", "ClientPayloadError", "TransferEncodingError",
            "ContentLengthError", "ServerDisconnectedError", "IncompleteRead", "ConnectionResetError",
            "MidStreamFallbackError"}
_TIMEOUT = {"Timeout", "APITimeoutError", "ReadTimeout", "TimeoutException", "TimeoutError", "ServerTimeoutError"}

_STATUS_CAUSES = {
    400: "the request was refused", 401: "authentication failed (check the API key)",
    403: "access denied (check the API key's permissions)", 404: "no such model or endpoint",
    408: "no reply in time", 413: "the request is too large", 422: "the request was refused",
    429: "rate limited",
}
_RETRIED_STATUSES = {408, 409, 429}  # and every 5xx


@dataclass(frozen=True)
class ModelFailure:
    cause: str  # one line, without the model's name
    retryable: bool
    retry_after: float | None = None  # seconds the server asked for (Retry-After)


class ModelCallError(Exception):
    """A real model call failed: `model 'NAME' (provider/id): cause`, one line."""

    def __init__(self, label: str, failure: ModelFailure) -> None:
        super().__init__(f"{label}: {failure.cause}")
        self.failure = failure


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < MAX_CHAIN:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _status(exc: BaseException) -> int | None:
    for name in ("status_code", "code"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and 100 <= value <= 599:
            return value
    return None


def _detail(exc: BaseException) -> str:
    """The server's own words, without the libraries' prefixes ("litellm.RateLimitError: ...")."""
    text = str(getattr(exc, "message", "") or exc)
    for marker in ("Exception - ", "Error - ", "Error: "):
        if marker in text:
            text = text.rsplit(marker, 1)[1]
    text = visible(" ".join(text.split()))
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def retry_after(exc: BaseException) -> float | None:
    """The Retry-After header (seconds or an HTTP date) of the error's HTTP response, if any."""
    for item in _chain(exc):
        headers: Any = getattr(item, "litellm_response_headers", None)
        if headers is None:
            headers = getattr(getattr(item, "response", None), "headers", None)
        if headers is None:
            continue
        try:
            value = headers.get("retry-after") or headers.get("Retry-After")
        except Exception:  # a headers object that is not a mapping
            continue
        if not value:
            continue
        value = str(value).strip()
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):  # neither seconds nor a date: ignored
                continue
        if seconds == seconds and seconds >= 0:  # not NaN, not in the past
            return seconds
        return 0.0
    return None


_CAP_WORDS = "escalate's cap on"  # in every ReplyTooLarge message (engine/runtime/reply_cap.py)


def classify(exc: BaseException) -> ModelFailure:
    """What a model call's exception means for the user and for the retry policy."""
    chain = _chain(exc)
    names = {type(item).__name__ for item in chain}
    if "ReplyTooLarge" in names:  # engine/runtime/reply_cap.py: our words, not the server's
        too_large = next(item for item in chain if type(item).__name__ == "ReplyTooLarge")
        status = getattr(too_large, "status", None)
        return ModelFailure(str(too_large), status is None or status in _RETRIED_STATUSES or status >= 500)
    capped = next((m for m in map(str, chain) if _CAP_WORDS in m), None)
    if capped is not None:  # a library re-raised the cap as its own error, without its cause
        start = max(capped.rfind("the reply is larger than"), capped.rfind("an error reply (HTTP"), 0)
        return ModelFailure(capped[start:].split("\n")[0], True)
    if names & _UNREACHABLE:
        root = chain[-1]
        return ModelFailure(f"cannot reach the server ({_detail(root)})", True)
    if names & _CUT_OFF:
        return ModelFailure("the reply was cut off (the connection closed in the middle of it)", True)
    if names & _TIMEOUT or any(isinstance(item, (TimeoutError, asyncio.TimeoutError)) for item in chain):
        return ModelFailure("no reply in time (the request timed out)", True)
    status = next((s for s in map(_status, chain) if s is not None), None)
    if status is None:
        return ModelFailure(f"{type(exc).__name__}: {_detail(exc)}", False)
    cause = _STATUS_CAUSES.get(status, "server error" if status >= 500 else "the request failed")
    wait = retry_after(exc)
    after = f", retry after {wait:g} s" if wait is not None else ""
    retryable = status in _RETRIED_STATUSES or status >= 500
    return ModelFailure(f"{cause} (HTTP {status}{after}): {_detail(exc)}", retryable, wait)


def reply_failure(response: Any) -> ModelFailure | None:
    """A finished turn that is not a usable reply: cut at the token limit, filtered, empty."""
    if getattr(response, "partial", False):
        return None
    code = getattr(response, "error_code", None)
    if code is None:
        return None
    code_text = getattr(code, "value", None) or str(code)
    message = visible(" ".join(str(getattr(response, "error_message", "") or "").split()))[:MAX_DETAIL]
    if code_text == "MAX_TOKENS":
        return ModelFailure(f"the reply was cut off at the token limit (max_tokens){': ' + message if message else ''}", False)
    if code_text == "MALFORMED_FUNCTION_CALL":
        return ModelFailure(f"the reply was cut off in the middle of a tool call{': ' + message if message else ''}", True)
    return ModelFailure(f"the model gave no usable reply ({code_text}){': ' + message if message else ''}", False)
