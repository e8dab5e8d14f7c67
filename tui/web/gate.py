"""Who may use the served console: whoever opened the one-time link first, in that browser.

The link carries a random token (256 bits). Its first use exchanges it for a session cookie
(random too, HttpOnly, SameSite=Strict) and redirects to `/`, so the token leaves the address
bar and the history at once; from then on the token is spent: the same link opened again, by
anyone, is refused. The browser that holds the cookie may open more tabs (each its own console)
and reconnect after "Session ended". Every request without that cookie, the page, its static
files and the websocket alike, is answered 403 with a short text and nothing else.
"""

from __future__ import annotations

import hmac
import secrets

COOKIE = "escalate_session"
TOKEN_BYTES = 32


def _same(a: str, b: str) -> bool:
    """Constant-time equality; a value that is not ASCII (a hostile cookie) is simply unequal."""
    return hmac.compare_digest(a.encode("utf-8", "surrogateescape"), b.encode("utf-8", "surrogateescape"))


class TokenGate:
    """The one-time token and the session it was exchanged for (one browser per token)."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(TOKEN_BYTES)
        self._session: str | None = None

    @property
    def spent(self) -> bool:
        return self._session is not None

    def exchange(self, offered: str) -> str | None:
        """The session id for the first right token offered; None for a wrong or spent one."""
        if self._session is not None or not _same(offered, self.token):
            return None
        self._session = secrets.token_urlsafe(TOKEN_BYTES)
        return self._session

    def admits(self, cookie: str | None) -> bool:
        return cookie is not None and self._session is not None and _same(cookie, self._session)
