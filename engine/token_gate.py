"""A one-time token exchanged for a session: the gate `escalate serve` (tui/web/gate.py, which
adds the browser's key and pages) and `escalate mcp --http` (engine/outside/mcp_http.py) both
stand behind.

The token is random (256 bits) and printed once. Its first right use is exchanged for a
session secret (the caller sends it as a cookie) and pins the address it was used at (its
`Host`): every later request must carry that session and name that address (a name rebound by
DNS to this machine gets nothing). The token itself is spent by its first use: offered again,
by anyone, it is refused.
"""

from __future__ import annotations

import hmac
import secrets

TOKEN_BYTES = 32


def same(a: str, b: str) -> bool:
    """Constant-time equality; a value that is not ASCII (a hostile cookie) is simply unequal."""
    return hmac.compare_digest(a.encode("utf-8", "surrogateescape"), b.encode("utf-8", "surrogateescape"))


def new_secret() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


class OneTimeToken:
    """The token, and the session and address it was exchanged for."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or new_secret()
        self._session: str | None = None
        self._host: str | None = None

    @property
    def spent(self) -> bool:
        return self._session is not None

    @property
    def host(self) -> str | None:
        """The pinned `host[:port]`, once the token is spent."""
        return self._host

    def exchange(self, offered: str, host: str) -> str | None:
        """The session secret for the first right token offered, pinning `host`; None for a
        wrong or spent token."""
        if self._session is not None or not same(offered, self.token):
            return None
        self._session = new_secret()
        self._host = host.lower()
        return self._session

    def admits(self, session: str | None, host: str) -> bool:
        """The session the token was exchanged for, at the address it was used at."""
        return (session is not None and self._session is not None and self._host is not None
                and same(session, self._session) and same(host.lower(), self._host))
