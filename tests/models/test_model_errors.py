"""Reading a model call's exception: the cause in one line, retryable or not, Retry-After."""

from __future__ import annotations

from email.utils import formatdate
import time

import httpx

from engine.runtime.model_errors import classify, retry_after


class StatusError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status
        self.response = httpx.Response(status, headers=headers or {})


def wrapped(inner: BaseException, outer: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except BaseException as exc:
        return exc


def test_the_transport_beats_the_status_the_libraries_put_on_it() -> None:
    refused = wrapped(ConnectionRefusedError(111, "Connect call failed"), StatusError(500, "Connection error."))
    failure = classify(refused)
    assert failure.retryable and failure.cause.startswith("cannot reach the server")
    cut = wrapped(httpx.RemoteProtocolError("peer closed connection"), StatusError(500, "Connection error."))
    assert classify(cut).cause.startswith("the reply was cut off")


def test_statuses() -> None:
    assert not classify(StatusError(401, "bad key")).retryable
    assert not classify(StatusError(404, "no model")).retryable
    assert classify(StatusError(503, "busy")).retryable
    limited = classify(StatusError(429, "slow down", {"Retry-After": "3"}))
    assert limited.retryable and limited.retry_after == 3.0
    assert limited.cause == "rate limited (HTTP 429, retry after 3 s): slow down"


def test_retry_after_as_a_date_and_nonsense() -> None:
    later = formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after(StatusError(429, "x", {"Retry-After": later})) <= 31
    assert retry_after(StatusError(429, "x", {"Retry-After": "soon"})) is None
    assert retry_after(StatusError(429, "x")) is None


def test_server_text_is_one_short_printable_line() -> None:
    hostile = "line one\nline two \x1b[31mred\x1b[0m " + "x" * 1000
    cause = classify(StatusError(500, hostile)).cause
    assert "\n" not in cause and "\x1b" not in cause and len(cause) < 250
