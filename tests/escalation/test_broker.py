import asyncio
import random

import pytest

from engine.escalation.broker import (
    CANCELLED,
    RAISED,
    RESOLVED,
    AlreadyResolved,
    BrokerEvent,
    EscalationBroker,
    InvalidResponse,
    NoTimeoutDefault,
    UnknownEscalation,
    timeout_decision,
)
from engine.kernel.clock import FakeClock
from engine.kernel.model import (
    OnTimeout,
    Option,
    Origin,
    ResolvedBy,
    Response,
    ResponseType,
)
from esc_helpers import make_escalation, make_pending


async def _raised(broker: EscalationBroker, pending) -> asyncio.Task:
    task = asyncio.create_task(broker.ask(pending))
    await asyncio.sleep(0)
    return task


async def test_answer_reaches_waiter_and_subscribers_see_order() -> None:
    broker = EscalationBroker(FakeClock())
    events: list[BrokerEvent] = []
    broker.subscribe(events.append)
    pending = make_pending()
    task = await _raised(broker, pending)
    assert broker.pending() == [pending]
    decision = broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "opt2", None, "be careful"))
    assert await task == decision
    assert decision.resolved_by is ResolvedBy.HUMAN
    assert decision.response.additional_instructions == "be careful"
    assert [e.kind for e in events] == [RAISED, RESOLVED]
    assert events[1].decision == decision
    assert broker.pending() == []
    assert broker.decision(pending.escalation.id) == decision


async def test_answer_after_resolution_and_unknown_are_refused() -> None:
    broker = EscalationBroker(FakeClock())
    pending = make_pending()
    task = await _raised(broker, pending)
    broker.answer(pending.escalation.id, Response(ResponseType.SKIP))
    await task
    with pytest.raises(AlreadyResolved):
        broker.answer(pending.escalation.id, Response(ResponseType.AGENT_DECIDE))
    with pytest.raises(AlreadyResolved):
        broker.expire(pending.escalation.id)
    with pytest.raises(UnknownEscalation):
        broker.answer("nope", Response(ResponseType.SKIP))


async def test_invalid_answers_are_refused_and_escalation_stays_pending() -> None:
    broker = EscalationBroker(FakeClock())
    pending = make_pending()
    task = await _raised(broker, pending)
    with pytest.raises(InvalidResponse, match="opt9"):
        broker.answer(pending.escalation.id, Response(ResponseType.OPTION, "opt9"))
    with pytest.raises(InvalidResponse):
        broker.answer(pending.escalation.id, Response(ResponseType.TEXT))
    assert broker.pending() == [pending]
    broker.answer(pending.escalation.id, Response(ResponseType.TEXT, text_response="fine"))
    assert (await task).response.text_response == "fine"


async def test_deadline_applies_default_exactly_once() -> None:
    clock = FakeClock()
    broker = EscalationBroker(clock)
    resolved: list[BrokerEvent] = []
    broker.subscribe(lambda e: resolved.append(e) if e.kind == RESOLVED else None)
    pending = make_pending(deadline=300, on_timeout=OnTimeout.STOP)
    task = await _raised(broker, pending)
    clock.advance(299)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(1)
    decision = await task
    assert decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT
    assert decision.stops_task and decision.response.response_type is ResponseType.SKIP
    clock.advance(1000)
    assert len(resolved) == 1
    with pytest.raises(AlreadyResolved):
        broker.answer(pending.escalation.id, Response(ResponseType.SKIP))


async def test_answer_before_deadline_disarms_timer() -> None:
    clock = FakeClock()
    broker = EscalationBroker(clock)
    pending = make_pending(deadline=10, on_timeout=OnTimeout.CONTINUE)
    task = await _raised(broker, pending)
    broker.answer(pending.escalation.id, Response(ResponseType.AGENT_DECIDE))
    await task
    assert clock.pending_timers() == 0
    assert clock.advance(20) == 0


@pytest.mark.parametrize(
    ("on_timeout", "option_id", "allow", "expected_type", "expected_option", "stops"),
    [
        (OnTimeout.CONTINUE, None, False, ResponseType.AGENT_DECIDE, None, False),
        (OnTimeout.STOP, None, False, ResponseType.SKIP, None, True),
        (OnTimeout.AGENT_DECIDE, None, False, ResponseType.AGENT_DECIDE, None, False),
        (OnTimeout.RECOMMENDED, None, False, ResponseType.OPTION, "opt1", False),
        (OnTimeout.OPTION, "opt2", False, ResponseType.OPTION, "opt2", False),
        (OnTimeout.OPTION, "missing", False, ResponseType.AGENT_DECIDE, None, False),
        # allowAgentDecision wins over the reason's default, even `stop`
        (OnTimeout.STOP, None, True, ResponseType.AGENT_DECIDE, None, False),
    ],
)
async def test_every_on_timeout_kind(on_timeout, option_id, allow, expected_type, expected_option, stops) -> None:
    clock = FakeClock()
    broker = EscalationBroker(clock)
    pending = make_pending(deadline=5, on_timeout=on_timeout, option_id=option_id, allow_agent_decision=allow)
    task = await _raised(broker, pending)
    clock.advance(5)
    decision = await task
    assert decision.response.response_type is expected_type
    assert decision.response.selected_option == expected_option
    assert decision.stops_task is stops
    assert decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT
    assert "nobody answered" in decision.note


def test_recommended_without_recommendation_lets_agent_decide() -> None:
    pending = make_pending(on_timeout=OnTimeout.RECOMMENDED, deadline=1, options=(Option("a", "A"),))
    assert timeout_decision(pending, 1).response.response_type is ResponseType.AGENT_DECIDE


def test_tool_approval_times_out_as_deny_and_wait_has_no_default() -> None:
    tool = make_pending(
        deadline=5,
        on_timeout=OnTimeout.CONTINUE,
        allow_agent_decision=True,
        origin=Origin.TOOL_APPROVAL,
        options=(Option("approve", "Approve"), Option("deny", "Deny")),
    )
    decision = timeout_decision(tool, 5)
    assert decision.response.selected_option == "deny"
    with pytest.raises(NoTimeoutDefault):
        timeout_decision(make_pending(on_timeout=OnTimeout.WAIT), 0)


async def test_expire_applies_default_now_and_refuses_waiting_policy() -> None:
    broker = EscalationBroker(FakeClock())
    waiting = make_pending(on_timeout=OnTimeout.WAIT)
    t1 = await _raised(broker, waiting)
    with pytest.raises(NoTimeoutDefault):
        broker.expire(waiting.escalation.id)
    assert broker.pending() == [waiting]
    timed = make_pending(deadline=100, on_timeout=OnTimeout.RECOMMENDED)
    t2 = await _raised(broker, timed)
    assert broker.expire(timed.escalation.id).response.selected_option == "opt1"
    assert (await t2).resolved_by is ResolvedBy.TIMEOUT_DEFAULT
    t1.cancel()


async def test_cancel_run_withdraws_only_that_runs_escalations() -> None:
    broker = EscalationBroker(FakeClock())
    kinds: list[tuple[str, str]] = []
    broker.subscribe(lambda e: kinds.append((e.kind, e.pending.escalation.run_id)))
    a = make_pending(run_id="A", deadline=5, on_timeout=OnTimeout.STOP)
    b = make_pending(run_id="B")
    ta, tb = await _raised(broker, a), await _raised(broker, b)
    broker.cancel_run("A")
    with pytest.raises(asyncio.CancelledError):
        await ta
    assert broker.pending() == [b]
    assert (CANCELLED, "A") in kinds
    with pytest.raises(AlreadyResolved, match="withdrawn"):
        broker.answer(a.escalation.id, Response(ResponseType.SKIP))
    broker.answer(b.escalation.id, Response(ResponseType.SKIP))
    assert (await tb).escalation_id == b.escalation.id


async def test_cancelling_the_waiter_withdraws_the_escalation() -> None:
    clock = FakeClock()
    broker = EscalationBroker(clock)
    pending = make_pending(deadline=5, on_timeout=OnTimeout.STOP)
    task = await _raised(broker, pending)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert broker.pending() == [] and clock.pending_timers() == 0


async def test_subscriber_answering_inside_raised_keeps_event_order() -> None:
    broker = EscalationBroker(FakeClock())
    order: list[str] = []

    def answerer(event: BrokerEvent) -> None:
        if event.kind == RAISED:
            broker.answer(event.pending.escalation.id, Response(ResponseType.SKIP), ResolvedBy.ANSWERS_FILE)

    def broken(event: BrokerEvent) -> None:
        raise RuntimeError("a faulty subscriber")

    broker.subscribe(answerer)
    broker.subscribe(broken)
    unsubscribe = broker.subscribe(lambda e: order.append(e.kind))
    decision = await broker.ask(make_pending(deadline=1, on_timeout=OnTimeout.STOP))
    assert decision.resolved_by is ResolvedBy.ANSWERS_FILE
    assert order == [RAISED, RESOLVED]
    unsubscribe()
    await broker.ask(make_pending())
    assert order == [RAISED, RESOLVED]


async def test_fail_makes_the_waiter_raise() -> None:
    broker = EscalationBroker(FakeClock())
    pending = make_pending()
    task = await _raised(broker, pending)
    broker.fail(pending.escalation.id, ValueError("answers file entry 2 does not fit"))
    with pytest.raises(ValueError, match="entry 2"):
        await task


async def test_duplicate_id_is_refused() -> None:
    broker = EscalationBroker(FakeClock())
    esc = make_escalation(id="same")
    task = await _raised(broker, make_pending(esc))
    with pytest.raises(Exception, match="already in use"):
        await broker.ask(make_pending(esc))
    task.cancel()


async def test_200_concurrent_escalations_answered_in_random_order() -> None:
    broker = EscalationBroker(FakeClock())
    rng = random.Random(4)
    pendings = []
    for i in range(200):
        options = tuple(Option(f"r{i}o{k}", f"run {i} option {k}") for k in range(3))
        pendings.append(make_pending(run_id=f"run{i % 50}", id=f"e{i}", options=options))

    async def waiter(p):
        return p.escalation.id, await broker.ask(p)

    tasks = [asyncio.create_task(waiter(p)) for p in pendings]
    await asyncio.sleep(0)
    assert [p.escalation.id for p in broker.pending()] == [f"e{i}" for i in range(200)]
    expected = {}
    order = list(range(200))
    rng.shuffle(order)
    for i in order:
        choice = f"r{i}o{rng.randrange(3)}"
        expected[f"e{i}"] = choice
        broker.answer(f"e{i}", Response(ResponseType.OPTION, choice))
        if rng.random() < 0.3:
            await asyncio.sleep(0)
    for esc_id, decision in await asyncio.gather(*tasks):
        assert decision.escalation_id == esc_id
        assert decision.response.selected_option == expected[esc_id]
    assert broker.pending() == []


@pytest.mark.parametrize("seed", range(5))
async def test_random_interleaving_of_answers_deadlines_and_cancels(seed: int) -> None:
    rng = random.Random(seed)
    clock = FakeClock()
    broker = EscalationBroker(clock)
    resolved: dict[str, int] = {}
    broker.subscribe(lambda e: resolved.__setitem__(e.pending.escalation.id, resolved.get(e.pending.escalation.id, 0) + 1) if e.kind != RAISED else None)
    pendings = []
    for i in range(300):
        deadline = rng.choice([None, rng.uniform(1, 100)])
        kind = rng.choice([OnTimeout.STOP, OnTimeout.CONTINUE, OnTimeout.RECOMMENDED])
        pendings.append(make_pending(id=f"s{seed}e{i}", run_id=f"run{i % 30}", deadline=deadline, on_timeout=kind))
    tasks = {p.escalation.id: asyncio.create_task(broker.ask(p)) for p in pendings}
    await asyncio.sleep(0)
    cancelled_runs: set[str] = set()
    human: dict[str, str] = {}
    for step in range(400):
        roll = rng.random()
        live = broker.pending()
        if roll < 0.5 and live:
            target = rng.choice(live).escalation
            option = rng.choice(["opt1", "opt2"])
            broker.answer(target.id, Response(ResponseType.OPTION, option))
            human[target.id] = option
        elif roll < 0.55:
            run = f"run{rng.randrange(30)}"
            if any(p.escalation.run_id == run for p in live):
                cancelled_runs.add(run)
            broker.cancel_run(run)
        else:
            clock.advance(rng.uniform(0, 3))
        if step % 20 == 0:
            await asyncio.sleep(0)
    for p in broker.pending():  # whatever still waits for a human gets an answer now
        broker.answer(p.escalation.id, Response(ResponseType.SKIP))
        human[p.escalation.id] = "skip"
    for p in pendings:
        esc_id = p.escalation.id
        task = tasks[esc_id]
        try:
            decision = await task
        except asyncio.CancelledError:
            assert p.escalation.run_id in cancelled_runs
            assert broker.decision(esc_id) is None
            continue
        assert decision.escalation_id == esc_id
        if esc_id in human:
            assert decision.resolved_by is ResolvedBy.HUMAN
            assert (decision.response.selected_option or "skip") == human[esc_id]
        else:
            assert decision.resolved_by is ResolvedBy.TIMEOUT_DEFAULT
            assert p.policy.deadline is not None and clock.now() >= p.policy.deadline
    assert all(count == 1 for count in resolved.values()) and len(resolved) == 300
    assert clock.pending_timers() == 0


async def test_a_tally_of_likeness_stays_what_a_pass_over_the_pending_counts() -> None:
    """The console's `b` asks the broker's tally (issue 26: a pass over 10,000 pending per
    answer); whichever way escalations come and go, it counts what `alike` counts."""
    from dataclasses import replace

    from engine.escalation.batch import alike, likeness
    from engine.kernel.model import Decision, Reason

    rng = random.Random(26)
    clock = FakeClock()
    broker = EscalationBroker(clock)
    early = broker.tally(likeness)  # made before anything is pending; counted at its first ask
    late = None
    tasks: list[asyncio.Task] = []
    args_shapes = ({"path": "a"}, {"path": 1}, {"path": "b", "force": True}, ["x"], None)

    def new_pending(n: int):
        if rng.random() < 0.5:
            esc = make_escalation(task=rng.choice(["t1", "t2"]), run_id=f"run{rng.randrange(6)}",
                                  origin=Origin.TOOL_APPROVAL, timeout=rng.choice([None, 5.0]))
            p = make_pending(esc, deadline=None if esc.timeout is None else clock.now() + esc.timeout,
                             on_timeout=OnTimeout.CONTINUE)
            return replace(p, extra={"tool": rng.choice(["rm", "ls"]), "args": rng.choice(args_shapes)})
        esc = make_escalation(task=rng.choice(["t1", "t2"]), run_id=f"run{rng.randrange(6)}",
                              reason=rng.choice([Reason.ARCHITECTURE_DECISION, Reason.TEST_FAILURE]))
        return make_pending(esc)

    for step in range(600):
        live = broker.pending()
        op = rng.randrange(9)
        if op <= 2 or not live:
            p = new_pending(step)
            if rng.random() < 0.5:
                tasks.append(await _raised(broker, p))
            else:
                broker.adopt(p)
        else:
            target = rng.choice(live)
            esc_id = target.escalation.id
            if op == 3:
                broker.answer(esc_id, Response(ResponseType.SKIP))
            elif op == 4:
                broker.settle(esc_id, rng.choice([None, Decision(esc_id, Response(ResponseType.SKIP), ResolvedBy.HUMAN, clock.now())]))
            elif op == 5:
                broker.cancel_run(target.escalation.run_id) if rng.random() < 0.5 else broker.forget_run(target.escalation.run_id)
            elif op == 6 and target.escalation.origin is Origin.TOOL_APPROVAL:  # listed again as held: another shape
                broker.refresh(replace(target, extra={**target.extra, "args": rng.choice(args_shapes), "v": step}))
            elif op == 7:
                broker.apply_many([Decision(p.escalation.id, Response(ResponseType.SKIP), ResolvedBy.HUMAN, clock.now())
                                   for p in rng.sample(live, min(3, len(live)))])
            else:
                clock.advance(rng.choice([0.0, 6.0]))  # deadlines pass: timeout defaults apply
        await asyncio.sleep(0)
        if step == 200:
            late = broker.tally(likeness)
        live = broker.pending()
        for p in live + [new_pending(-1)]:
            assert early.count(p) == len(alike(live, p)), step
            if late is not None:
                assert late.count(p) == len(alike(live, p)), step
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
