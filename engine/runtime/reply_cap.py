"""A model reply's size cap, held where the bytes arrive: an httpx transport.

Every real model's HTTP traffic (LiteLLM's OpenAI client and its own HTTP handler,
google.genai) goes through `CappedTransport`. A reply (a whole body or a stream of events) is
counted as it is read, and past `MAX_REPLY_BYTES` the read fails with `ReplyTooLarge`, before
any library holds the whole of it. An error reply (HTTP 4xx/5xx) has a much smaller cap,
`MAX_ERROR_BYTES`: the libraries run regular expressions over an error body on the event loop
(LiteLLM's secret redaction, about 4 s per MB), and a short body keeps that short; the error
keeps its status, so that a 500 is still retried and a 401 is not.

Replies are asked for uncompressed, and a compressed one is refused: its size could only be
known after inflating it. Proxies from the environment (HTTPS_PROXY, NO_PROXY) are chosen
here, per request, so that a proxied reply is capped too (the clients built around this
transport do not read the environment themselves).
"""

from __future__ import annotations

import asyncio
import urllib.request
import weakref
from typing import AsyncIterator

import httpx

MAX_REPLY_BYTES = 4 * 1024 * 1024  # a model reply, whole or streamed
MAX_ERROR_BYTES = 32 * 1024  # an error reply (real ones are under 2 KB; a proxy's HTML page, ~10 KB)


class ReplyTooLarge(Exception):
    """A model reply went past the cap; the connection is closed, the rest never read."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status  # an error reply's HTTP status, which decides whether to retry


def cap_text(limit: int = MAX_REPLY_BYTES) -> str:
    return f"{limit / (1024 * 1024):g} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"


class _CappedStream(httpx.AsyncByteStream):
    """The reply's bytes as they arrive, counted; past `limit`, the connection is closed."""

    def __init__(self, inner: httpx.AsyncByteStream, limit: int, status: int) -> None:
        self.inner = inner
        self.limit = limit
        self.status = status

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self.inner:
            seen += len(chunk)
            if seen > self.limit:
                await _closed(self.inner)
                raise _too_large(self.limit, self.status)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's own transport, one per event loop and proxy (a connection pool belongs to the
    loop that opened it: a console's loop, or each test's), with every reply capped."""

    def __init__(self, limit: int = MAX_REPLY_BYTES, error_limit: int = MAX_ERROR_BYTES) -> None:
        self.limit = limit
        self.error_limit = error_limit
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str | None, httpx.AsyncHTTPTransport]] = (
            weakref.WeakKeyDictionary())

    def _pool(self, url: httpx.URL) -> httpx.AsyncHTTPTransport:
        proxy = _environment_proxy(url)
        pools = self._pools.setdefault(asyncio.get_running_loop(), {})
        if proxy not in pools:
            pools[proxy] = httpx.AsyncHTTPTransport(proxy=proxy, trust_env=True)
        return pools[proxy]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["Accept-Encoding"] = "identity"
        response = await self._pool(request.url).handle_async_request(request)
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await _closed(response)
            raise ReplyTooLarge(f"the reply came compressed ({encoding[:20]}) though none was asked for: "
                                "its size cannot be capped, so it is refused")
        status = response.status_code
        limit = self.error_limit if status >= 400 else self.limit
        length = response.headers.get("Content-Length", "")
        if length.isdigit() and int(length) > limit:
            await _closed(response)
            raise _too_large(limit, status)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(status, headers=response.headers, request=request,
                              stream=_CappedStream(response.stream, limit, status), extensions=response.extensions)

    async def aclose(self) -> None:
        """Nothing: this transport is shared by every model client of the process, and one
        client's close must not close the others' connections. google.genai closes its client
        when the client is collected, on whatever loop runs then: closing this loop's pools
        there cut other runs' replies off in the middle ("the reply was cut off"). The pools
        stay open for their loop's life."""


async def _closed(reply: httpx.Response | httpx.AsyncByteStream) -> None:
    """Close a reply cut short. Closing a connection in the middle of a body may itself fail (the
    server still writing): the cap is what is reported, never that (seen: "the reply was cut off"
    in place of the cap, once in a few runs on a loaded host)."""
    try:
        await reply.aclose()
    except Exception:
        pass


def _too_large(limit: int, status: int) -> ReplyTooLarge:
    if status >= 400:
        return ReplyTooLarge(f"an error reply (HTTP {status}) larger than {cap_text(limit)}, escalate's cap on an "
                             "error reply", status)
    return ReplyTooLarge(f"the reply is larger than {cap_text(limit)}, escalate's cap on a model reply")


def _environment_proxy(url: httpx.URL) -> str | None:
    """The proxy the environment names for this URL (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY)."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


_shared: CappedTransport | None = None


def capped_transport() -> CappedTransport:
    """The process's one capped transport (its pools are per event loop)."""
    global _shared
    if _shared is None:
        _shared = CappedTransport()
    return _shared


def capped_client(timeout: float | None = 600.0) -> httpx.AsyncClient:
    """An httpx client over the capped transport, the environment's proxies chosen by it."""
    return httpx.AsyncClient(transport=capped_transport(), trust_env=False, timeout=timeout, follow_redirects=True)
