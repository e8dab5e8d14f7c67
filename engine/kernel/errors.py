"""Answers refused: raised where decisions are stored (engine/durable/decisions.py) and by the
broker (engine/escalation/broker.py, which adds the other refusals), caught by the runtime, the
CLI and the console. Here, below them all, so that none imports another to name them."""

from __future__ import annotations


class EscalationError(Exception):
    """An answer the broker refuses (unknown id, already resolved, option not offered)."""


class RequestChanged(EscalationError):
    """The escalation waits as another request than the one its decider saw (the digests
    differ): nothing was decided; it is shown again as the database holds it."""
