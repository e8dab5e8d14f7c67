"""`builtin streetrace.web`: an HTTP(S) GET returning text (async, size- and time-limited).

The URL and the server are untrusted. A per-read timeout alone does not end a server that sends
one byte every few seconds, so the whole fetch (connect, headers, body, redirects) has one
overall deadline; the body is cut at `max_bytes`.
"""

from __future__ import annotations

import asyncio
import codecs
from typing import Any, Callable
from urllib.parse import urlparse

DEADLINE = 30.0  # seconds for the whole fetch
MAX_BYTES = 200_000


def web_functions(*, deadline: float = DEADLINE, max_bytes: int = MAX_BYTES) -> list[Callable[..., Any]]:
    async def fetch_url(url: str) -> dict[str, Any]:
        """Fetch a web page (HTTP or HTTPS GET) and return its text."""
        try:
            if urlparse(url).scheme not in ("http", "https"):
                return {"error": "only http and https URLs can be fetched"}
            async with asyncio.timeout(deadline):
                return await _get(url, deadline, max_bytes)
        except TimeoutError:
            return {"error": f"fetch failed: no complete answer within {deadline:g} s"}
        except Exception as exc:  # a bad URL or server is the agent's to see, never a crash
            return {"error": f"fetch failed: {exc}"}

    return [fetch_url]


async def _get(url: str, deadline: float, max_bytes: int) -> dict[str, Any]:
    import httpx  # installed with google-adk; imported only when a run uses the tool

    body = bytearray()
    async with httpx.AsyncClient(timeout=deadline, follow_redirects=True) as client:
        async with client.stream("GET", url) as response:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= max_bytes:
                    break
    return {
        "status": response.status_code,
        "content": bytes(body[:max_bytes]).decode(_codec(response.encoding), "replace"),
        "truncated": len(body) >= max_bytes,
    }


def _codec(name: str | None) -> str:
    """The server's charset if Python knows it, else UTF-8."""
    try:
        return codecs.lookup(name or "utf-8").name
    except LookupError:
        return "utf-8"
