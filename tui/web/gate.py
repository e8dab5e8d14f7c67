"""Who may use the served console: whoever opened the one-time link first, in that browser, at
that address, from a page this server served.

The link carries a random one-time token (engine/token_gate.py). Its first use is exchanged for
two secrets:

- a session cookie (HttpOnly, SameSite=Strict) that lets the browser load the page and its
  static files. A cookie carries no port: the browser also sends it to any other server on the
  same host, so the cookie alone opens nothing that acts;
- a key the page's script keeps in the browser's `localStorage`, which belongs to this origin
  (scheme, host and port) alone: no page of another port can read it, and no server is ever
  sent it.

The address the link was opened at (its `Host`) is pinned: every later request must name it (a
name rebound by DNS to this machine gets nothing). Each page served holds a one-time page
secret; the websocket, the only way to act, opens with the cookie, that page secret (spent on
use) and the key together, from a page of the pinned origin. The token itself is spent by its
first use: the same link opened again, by anyone, is refused.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from engine.token_gate import OneTimeToken, new_secret, same

COOKIE = "escalate_session"
KEY_PROTOCOL = "escalate-key."  # the websocket subprotocol the page's script offers: this + the key
MAX_PAGES = 64  # page secrets served and not yet used; older ones are forgotten (their page reloads)


@dataclass(frozen=True)
class Admission:
    """What the first use of the token gives its browser."""

    session: str  # the cookie's value
    key: str  # for the page's localStorage: never in a cookie, a URL or a log


class TokenGate:
    """The one-time token (engine/token_gate.py), and the browser, address and pages it was
    exchanged for."""

    def __init__(self, token: str | None = None) -> None:
        self._once = OneTimeToken(token)
        self._key: str | None = None
        self._pages: OrderedDict[str, None] = OrderedDict()

    @property
    def token(self) -> str:
        return self._once.token

    @property
    def spent(self) -> bool:
        return self._once.spent

    def exchange(self, offered: str, host: str) -> Admission | None:
        """The secrets for the first right token offered, pinning `host`; None for a wrong or
        spent token."""
        session = self._once.exchange(offered, host)
        if session is None:
            return None
        self._key = new_secret()
        return Admission(session, self._key)

    def admits(self, cookie: str | None, host: str) -> bool:
        """The browser that used the token, at the address it used it at."""
        return self._once.admits(cookie, host)

    @property
    def host(self) -> str | None:
        """The pinned `host[:port]`, once the token is spent."""
        return self._once.host

    def new_page(self) -> str:
        """A one-time page secret for a page about to be served."""
        page = new_secret()
        self._pages[page] = None
        while len(self._pages) > MAX_PAGES:
            self._pages.popitem(last=False)
        return page

    def opens(self, page: str, offered_key: str | None) -> bool:
        """A websocket from a page served here (its secret is spent now, whatever follows)
        whose script holds the key."""
        known = self._pages.pop(page, 0) is None
        return known and offered_key is not None and self._key is not None and same(offered_key, self._key)
