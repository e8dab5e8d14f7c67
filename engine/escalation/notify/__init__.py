"""Notifiers: every channel that tells a person that decisions wait, registered one way.

A channel is a `Notifier`: called with an `Attention` (a decision that started waiting, if one
did, and how many wait now) after each loop turn in which the broker said something. The channels today:
the rules' command (engine/escalation/notify/command.py), the console's bell, terminal title and
desktop notification (tui/desktop_notify.py). `notifiers(broker)` is the one registry of a
broker's channels and the one place that calls them all.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from dataclasses import dataclass
from typing import Callable, Protocol

from engine.escalation.broker import RAISED, BrokerEvent, EscalationBroker
from engine.kernel.model import PendingEscalation

log = logging.getLogger("escalate.notify")
# More decisions than this started waiting in one loop turn: the channels are told once, of
# them all (each channel still sees every one in `Attention.raised`).
TELL_EACH_AT_MOST = 20


@dataclass(frozen=True)
class Attention:
    """What a person should know now. `raised`: the decisions that started waiting since the
    last call and still wait (one answered in the turn that raised it, e.g. by an answers file,
    is nobody's concern), in raise order; `waiting`: how many decisions wait now."""

    raised: tuple[PendingEscalation, ...]
    waiting: int


class Notifier(Protocol):
    def __call__(self, attention: Attention) -> None:
        """Tell the person (quickly: a slow channel runs its work as a task of its own)."""


class Notifiers:
    """A broker's channels. After a loop turn in which the broker said something, every channel
    is told once per decision that started waiting in it and still waits (once of them all past
    TELL_EACH_AT_MOST; once, with none, when decisions only ended); a failing channel is logged
    and never stops the others."""

    def __init__(self, broker: EscalationBroker) -> None:
        self._broker = weakref.ref(broker)  # the registry's value must not keep its key alive
        self._channels: list[tuple[Notifier, contextvars.Context | None]] = []
        self._raised: list[str] = []
        self._scheduled = False
        broker.subscribe(self._heard)  # for the broker's life

    def register(self, notifier: Notifier, context: contextvars.Context | None = None) -> Callable[[], None]:
        """Call `notifier` from now on (inside `context`, when given: a UI's own); returns
        the call that unregisters it."""
        channel = (notifier, context)
        self._channels.append(channel)

        def unregister() -> None:
            if channel in self._channels:
                self._channels.remove(channel)

        return unregister

    def tell(self, attention: Attention) -> None:
        """Give `attention` to every channel now."""
        for notifier, context in list(self._channels):
            try:
                if context is None:
                    notifier(attention)
                else:
                    context.run(notifier, attention)
            except Exception:  # one channel's failure must not silence the others
                log.exception("notify: a channel failed")

    def _heard(self, event: BrokerEvent) -> None:
        if event.kind == RAISED:
            self._raised.append(event.pending.escalation.id)
        if self._scheduled:
            return
        try:
            asyncio.get_running_loop().call_soon(self._flush)
        except RuntimeError:  # no loop running here (a synchronous caller): nothing to run on
            log.warning("notify: no event loop; %d escalations not relayed", len(self._raised))
            self._raised.clear()
            return
        self._scheduled = True

    def _flush(self) -> None:
        self._scheduled = False
        raised, self._raised = self._raised, []
        broker = self._broker()
        if broker is None:
            return
        still = [p for p in (broker.get(esc_id) for esc_id in dict.fromkeys(raised)) if p is not None]
        waiting = len(broker.pending())
        if len(still) > TELL_EACH_AT_MOST:  # a console opening on thousands: one bell, not thousands
            self.tell(Attention(tuple(still), waiting))
            return
        for pending in still:  # one call per decision: a bell, a notification each
            self.tell(Attention((pending,), waiting))
        if not still:
            self.tell(Attention((), waiting))


_REGISTRY: weakref.WeakKeyDictionary[EscalationBroker, Notifiers] = weakref.WeakKeyDictionary()


def notifiers(broker: EscalationBroker) -> Notifiers:
    """The registry of `broker`'s channels (made on first use; it lives as long as the broker)."""
    found = _REGISTRY.get(broker)
    if found is None:
        found = _REGISTRY[broker] = Notifiers(broker)
    return found
