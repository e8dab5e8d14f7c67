"""News between the processes sharing one database: an escalation raised, decided or withdrawn.

The database stays the truth; a message is only a hint to look (`raised ID`, `decided ID`,
`withdrawn ID`; `*`: look at everything again, e.g. after a reconnection), so a lost one costs
a few seconds (the broker's slow poll), never a decision.

- PostgreSQL: `NOTIFY` inside the writing transaction (delivered at commit, to every process on
  any host that `LISTEN`s on the database), and one listening connection per process. That
  connection also holds a session advisory lock named after the process's owner id: when the
  process dies, the server drops the connection and the lock, so another host sees at once that
  it is gone (`owner_gone`).
- SQLite: a database file lives on one host, so each listening process binds a Unix datagram
  socket in a folder beside the database (or in this user's own folder when that path would be
  too long for a socket), and a writer sends each one a datagram after its commit. A socket left
  by a killed process refuses the datagram and is removed. The folder is this user's alone
  (0700, checked each time it is opened): another user's processes on the same file, or a
  folder someone else made first, mean no news: the poll serves.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import sqlalchemy as sa

from engine.private import NotPrivate, check_private, private_folder, user_folder, why

log = logging.getLogger("escalate.durable")

CHANNEL = "escalate_news"
RESYNC = "*"
# The longest socket path `bind` takes: sockaddr_un holds 108 bytes with its terminator on Linux,
# 104 on macOS and the BSDs.
_SOCKET_PATH_MAX = 107 if sys.platform.startswith("linux") else 103
_RECONNECT_SECONDS = 0.5

Listener = Callable[[str], None]


class Signals:
    """No cross-process news (a platform without Unix sockets): the broker's poll alone."""

    def in_transaction(self, conn: sa.Connection, message: str) -> None:
        """Called inside the writing transaction."""

    def committed(self, message: str) -> None:
        """Called after the writing transaction committed."""

    def listen(self, on_message: Listener) -> Callable[[], None]:
        """`on_message(text)` on a thread of its own for every message; returns `stop`."""
        return lambda: None

    def hold_presence(self, owner: str) -> None:
        """Keep a sign that this process (`owner`) is alive for as long as it runs."""

    def owner_gone(self, owner: str) -> bool:
        """True when `owner`'s process is known to be gone (False: alive or unknown)."""
        return False

    def close(self) -> None:
        pass


class _Fanout(Signals):
    """The listeners of one process, each told every message on the listening thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []

    def _deliver(self, message: str) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(message)
            except Exception:
                log.exception("a news listener failed")


def signals_for(url: str, engine: sa.Engine) -> Signals:
    from engine.durable.urls import sqlite_path

    path = sqlite_path(url)
    if path is not None:
        return SocketSignals(path) if hasattr(socket, "AF_UNIX") else Signals()
    return PostgresSignals(url, engine)


# -- PostgreSQL: LISTEN/NOTIFY and an advisory lock per live process ------------------------------


def _lock_key(owner: str) -> int:
    """A signed 64-bit advisory lock key for an owner id."""
    return int.from_bytes(hashlib.sha256(owner.encode()).digest()[:8], "big", signed=True)


class PostgresSignals(_Fanout):
    def __init__(self, url: str, engine: sa.Engine) -> None:
        super().__init__()
        self.url = url
        self.engine = engine
        self._owner: str | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._conn: Any = None

    def in_transaction(self, conn: sa.Connection, message: str) -> None:
        conn.execute(sa.text("SELECT pg_notify(:channel, :message)"), {"channel": CHANNEL, "message": message})

    def listen(self, on_message: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(on_message)
        self._ensure_thread()

        def stop() -> None:
            with self._lock:
                if on_message in self._listeners:
                    self._listeners.remove(on_message)

        return stop

    def hold_presence(self, owner: str) -> None:
        self._owner = owner
        self._ensure_thread()

    def owner_gone(self, owner: str) -> bool:
        # The lock is free exactly when no live session holds it: the owner's connection closed.
        with self.engine.begin() as c:
            return bool(c.execute(sa.text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": _lock_key(owner)}).scalar())

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._drop_connection()

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._serve, name="escalate-listen", daemon=True)
                self._thread.start()

    def _connect(self) -> Any:
        import psycopg

        from engine.durable.urls import engine_url

        conninfo = engine_url(self.url).replace("postgresql+psycopg://", "postgresql://", 1)
        conn = psycopg.connect(conninfo, autocommit=True, connect_timeout=10)
        if self._owner is not None:
            conn.execute("SELECT pg_advisory_lock(%s)", (_lock_key(self._owner),))
        conn.execute(f"LISTEN {CHANNEL}")
        return conn

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                self._conn = self._connect()
                # What was said before this connection listened: look at everything again.
                self._deliver(RESYNC)
                while not self._stop.is_set():
                    for note in self._conn.notifies(timeout=0.5):
                        self._deliver(note.payload)
            except Exception:  # the server restarted, the network dropped: connect again
                if self._stop.is_set():
                    return
                log.debug("listening connection lost", exc_info=True)
                self._drop_connection()
                self._stop.wait(_RECONNECT_SECONDS)


# -- SQLite: Unix datagram sockets in a folder of this user's ------------------------------------


def _socket_name() -> str:
    return f"{secrets.token_hex(8)}.sock"


_SOCKET_NAME_BYTES = len(_socket_name())  # every name is as long


def _fits(folder: Path) -> bool:
    """Whether a socket of ours in `folder` has a path that `bind` takes (counted in bytes)."""
    return len(os.fsencode(folder)) + 1 + _SOCKET_NAME_BYTES <= _SOCKET_PATH_MAX


def news_folder(db_path: Path) -> Path | None:
    """Where the listening sockets of a SQLite database live (the same for every process of this
    user with the same $XDG_RUNTIME_DIR or temporary folder): `<db>.news` beside it, else, when
    a socket's path there would be too long, `news-<hash>` in this user's own folder; None when
    that is too long as well."""
    beside = Path(str(db_path) + ".news")
    if _fits(beside):
        return beside
    digest = hashlib.sha256(os.fsencode(db_path)).hexdigest()[:16]
    fallback = user_folder() / f"news-{digest}"
    return fallback if _fits(fallback) else None


_POLL_SECONDS = 0.5  # the listening thread looks whether it was closed (close() also wakes it)


class SocketSignals(_Fanout):
    """A socket per listening process in the news folder, which is this user's alone: made 0700
    and checked every time it is opened, to listen or to send. A folder someone else made (or
    none that fits) means no sockets at all: the broker's poll serves, and one log line says why."""

    def __init__(self, db_path: Path) -> None:
        super().__init__()
        self._db_path = db_path
        self.folder = news_folder(db_path)
        # The user's own folder the news folder lives in, checked first (None: beside the database).
        self._within = self.folder.parent if self.folder is not None and self.folder.parent == user_folder() else None
        self._sender: socket.socket | None = None
        self._socket: socket.socket | None = None
        self._path: Path | None = None
        self._thread: threading.Thread | None = None
        self._told = False

    def committed(self, message: str) -> None:
        if self.folder is None or not os.path.lexists(self.folder):  # nobody listens
            return
        try:
            for folder in (self._within, self.folder):
                if folder is not None:
                    check_private(folder)
            entries = list(os.scandir(self.folder))
        except (NotPrivate, OSError) as exc:
            self._tell(why(exc))
            return
        data = message.encode("utf-8", "surrogateescape")
        with self._lock:
            if self._sender is None:
                self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sender.setblocking(False)
            sender = self._sender
            for entry in entries:
                if not entry.name.endswith(".sock"):
                    continue
                try:
                    sender.sendto(data, entry.path)
                except (ConnectionRefusedError, FileNotFoundError):  # its process is gone
                    _unlink(entry.path)
                except OSError:  # a full queue (a busy listener): its poll catches up
                    pass

    def listen(self, on_message: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(on_message)
            if self._socket is None and not self._told:
                try:
                    self._bind()
                except (NotPrivate, OSError) as exc:
                    self._tell(why(exc))

        def stop() -> None:
            with self._lock:
                if on_message in self._listeners:
                    self._listeners.remove(on_message)

        return stop

    def _bind(self) -> None:
        if self.folder is None:
            raise NotPrivate(f"{self._db_path}.news and {user_folder()} are too long a path for a socket")
        for folder in (self._within, self.folder):
            if folder is not None:
                private_folder(folder)
        path = self.folder / _socket_name()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(str(path))
        except OSError:
            sock.close()
            raise
        sock.settimeout(_POLL_SECONDS)
        self._socket, self._path = sock, path
        self._thread = threading.Thread(target=self._serve, args=(sock,), name="escalate-listen", daemon=True)
        self._thread.start()

    def _tell(self, reason: str) -> None:
        """Once: why this process neither hears nor sends news (its poll serves instead)."""
        if not self._told:
            self._told = True
            log.warning("escalate: news between processes is off: %s; other processes' escalations and "
                        "decisions are seen by the poll, within seconds", reason)

    def close(self) -> None:
        with self._lock:
            sock, self._socket = self._socket, None
            sender, self._sender = self._sender, None
            path, self._path = self._path, None
            thread, self._thread = self._thread, None
        if thread is not None and path is not None:
            _wake(path)  # closing the socket does not end a recv() under way: the process's exit waited for its poll
        if path is not None:
            _unlink(str(path))
        if sock is not None:
            sock.close()
        if sender is not None:
            sender.close()
        if thread is not None:
            thread.join(timeout=2.0)

    def _serve(self, sock: socket.socket) -> None:
        while True:
            try:
                data = sock.recv(4096)
            except socket.timeout:
                if self._socket is not sock:
                    return
                continue
            except OSError:  # closed
                return
            if self._socket is not sock:  # close()'s wake, or news arriving as it closes
                return
            self._deliver(data.decode("utf-8", "surrogateescape"))


def _wake(path: Path) -> None:
    """An empty datagram to our own socket: its listening thread returns from recv() now."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as waker:
            waker.setblocking(False)
            waker.sendto(b"", str(path))
    except OSError:  # a full queue: the thread ends at its next poll instead
        pass


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
