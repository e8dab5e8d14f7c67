"""`builtin streetrace.web`: an HTTP(S) GET returning text (async, size- and time-limited)."""

from __future__ import annotations

from typing import Any, Callable
from urllib.parse import urlparse

MAX_BYTES = 200_000


def web_functions(*, time_limit: float = 20.0) -> list[Callable[..., Any]]:
    async def fetch_url(url: str) -> dict[str, Any]:
        """Fetch a web page (HTTP or HTTPS GET) and return its text."""
        import httpx  # installed with google-adk; imported only when a run uses the tool

        if urlparse(str(url)).scheme not in ("http", "https"):
            return {"error": "only http and https URLs can be fetched"}
        try:
            async with httpx.AsyncClient(timeout=time_limit, follow_redirects=True) as client:
                async with client.stream("GET", str(url)) as response:
                    body = b""
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) >= MAX_BYTES:
                            break
        except httpx.HTTPError as exc:
            return {"error": f"fetch failed: {exc}"}
        return {
            "status": response.status_code,
            "content": body[:MAX_BYTES].decode(response.encoding or "utf-8", "replace"),
            "truncated": len(body) >= MAX_BYTES,
        }

    return [fetch_url]
