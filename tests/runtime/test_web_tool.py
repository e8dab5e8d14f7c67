"""`fetch_url` against real HTTP servers on 127.0.0.1: an overall deadline, a size cap."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from engine.runtime.tools.web import web_functions

Serve = Callable[[socket.socket], None]


@pytest.fixture
def server() -> Iterator[Callable[[Serve], str]]:
    """Start a one-thread-per-connection server on 127.0.0.1 that answers with `serve`."""
    listeners: list[socket.socket] = []
    stop = threading.Event()

    def start(serve: Serve) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(0.2)
        listeners.append(listener)

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except (TimeoutError, OSError):
                    continue
                threading.Thread(target=_answer, args=(conn, serve, stop), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}/"

    yield start
    stop.set()
    for listener in listeners:
        listener.close()


def _answer(conn: socket.socket, serve: Serve, stop: threading.Event) -> None:
    with conn:
        conn.settimeout(5)
        try:
            conn.recv(65536)  # the request (small, one read is enough here)
            serve(conn) if not stop.is_set() else None
        except OSError:  # the client gave up: what these servers are waiting for
            pass


def trickle(data: bytes, every: float) -> Serve:
    """Send `data` one byte at a time, `every` seconds apart (a slowloris server)."""

    def serve(conn: socket.socket) -> None:
        for byte in data:
            conn.sendall(bytes([byte]))
            time.sleep(every)

    return serve


HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n"


@pytest.mark.timeout(20)  # before the deadline existed, each of these hung for ever
@pytest.mark.parametrize("where", ["body", "headers"])
async def test_a_trickling_server_ends_in_an_error_at_the_deadline(server, where: str) -> None:
    # A byte every 0.3 s never trips a per-read timeout; only an overall deadline ends it.
    data = HEADERS + b"x" * 1_000_000 if where == "body" else HEADERS
    [fetch_url] = web_functions(deadline=1.0)
    started = time.monotonic()
    result = await fetch_url(server(trickle(data, 0.3)))
    assert "error" in result and "1 s" in result["error"], result
    assert time.monotonic() - started < 10  # not a timing claim: it ended, well before the test's limit


@pytest.mark.timeout(20)
async def test_an_endless_body_stops_at_the_size_cap(server) -> None:
    def endless(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        while True:
            conn.sendall(b"y" * 65536)

    [fetch_url] = web_functions(deadline=10.0, max_bytes=100_000)
    result = await fetch_url(server(endless))
    assert result["status"] == 200 and result["truncated"] is True
    assert len(result["content"]) == 100_000 and set(result["content"]) == {"y"}


async def test_a_small_page_and_a_bogus_charset(server) -> None:
    def page(conn: socket.socket) -> None:
        body = "h\u00e9llo".encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=no-such-codec\r\n"
                     + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)

    [fetch_url] = web_functions()
    assert await fetch_url(server(page)) == {"status": 200, "content": "h\u00e9llo", "truncated": False}


@pytest.mark.parametrize("url", ["http://", "http://[::1", "https://exa mple.com/", "http://127.0.0.1:99999/"])
async def test_malformed_urls_are_error_results(url: str) -> None:
    [fetch_url] = web_functions(deadline=5.0)
    assert "error" in await fetch_url(url)
