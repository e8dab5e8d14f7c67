"""The one notifier interface: channels registered on a broker's registry are told, after the
turn that raised it, of each decision still waiting, and of how many wait; a failing channel
silences no other; an unregistered one hears nothing more."""

from __future__ import annotations

import asyncio
import contextvars
import logging

from engine.escalation.broker import EscalationBroker
from engine.escalation.notify import Attention, notifiers
from engine.kernel.clock import FakeClock
from engine.kernel.model import Response, ResponseType
from esc_helpers import make_escalation, make_pending


def raise_(broker: EscalationBroker, esc_id: str) -> asyncio.Task:
    return asyncio.get_running_loop().create_task(broker.ask(make_pending(make_escalation(id=esc_id))))


async def turns(n: int = 3) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def test_every_channel_hears_each_waiting_decision_even_when_another_fails(caplog) -> None:
    broker = EscalationBroker(FakeClock(1000.0))
    heard: list[Attention] = []

    def broken(attention: Attention) -> None:
        raise RuntimeError("a terminal that went away")

    notifiers(broker).register(broken)
    notifiers(broker).register(heard.append)
    caplog.set_level(logging.ERROR, logger="escalate.notify")
    asks = [raise_(broker, "e1"), raise_(broker, "e2")]
    await turns()
    assert [(tuple(p.escalation.id for p in a.raised), a.waiting) for a in heard] == [(("e1",), 2), (("e2",), 2)]
    assert "a channel failed" in caplog.text

    heard.clear()
    broker.answer("e1", Response(ResponseType.SKIP))
    await turns()
    assert heard == [Attention((), 1)]  # decisions only ended: the count (a title) is told
    for task in asks:
        task.cancel()


async def test_a_decision_answered_in_the_turn_that_raised_it_is_told_to_nobody() -> None:
    broker = EscalationBroker(FakeClock(1000.0))
    heard: list[Attention] = []
    notifiers(broker).register(heard.append)
    broker.subscribe(lambda e: broker.answer(e.pending.escalation.id, Response(ResponseType.SKIP))
                     if e.kind == "raised" else None)  # e.g. an answers file
    await broker.ask(make_pending(make_escalation(id="e1")))
    await turns()
    assert heard == [Attention((), 0)]


async def test_a_channel_runs_in_its_context_and_hears_nothing_once_unregistered() -> None:
    broker = EscalationBroker(FakeClock(1000.0))
    who = contextvars.ContextVar("who", default="nobody")
    seen: list[str] = []
    who.set("the console")
    context = contextvars.copy_context()
    who.set("a run")
    stop = notifiers(broker).register(lambda attention: seen.append(who.get()), context)
    first = raise_(broker, "e1")
    await turns()
    assert seen == ["the console"]
    stop()
    second = raise_(broker, "e2")
    await turns()
    assert seen == ["the console"]
    assert notifiers(broker) is notifiers(broker)  # one registry per broker
    first.cancel()
    second.cancel()
