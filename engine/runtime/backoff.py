"""How long a retry waits under an agent's `retry` policy. Its own module: the agent call (which
retries a failed call) and the real model (which retries a failed turn) both read it."""

from __future__ import annotations


def backoff_delay(kind: str | None, attempt: int) -> float:
    """Seconds before attempt `attempt + 1` under a retry policy's backoff."""
    base = 0.2
    if kind == "exponential":
        return min(base * (2**attempt), 10.0)
    if kind == "linear":
        return min(base * (attempt + 1), 10.0)
    return base
