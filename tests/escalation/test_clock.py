import asyncio

import pytest

from engine.kernel.clock import FakeClock, RealClock


def test_fake_clock_fires_due_callbacks_in_deadline_order() -> None:
    clock = FakeClock(10.0)
    seen: list[tuple[str, float]] = []
    clock.call_at(15, lambda: seen.append(("b", clock.now())))
    clock.call_at(12, lambda: seen.append(("a", clock.now())))
    clock.call_at(15, lambda: seen.append(("c", clock.now())))
    clock.call_at(30, lambda: seen.append(("late", clock.now())))
    assert clock.advance(1) == 0
    assert seen == []
    assert clock.advance(4) == 3
    assert seen == [("a", 12.0), ("b", 15.0), ("c", 15.0)]
    assert clock.now() == 15.0
    assert clock.pending_timers() == 1


def test_fake_clock_cancel_and_chained_scheduling() -> None:
    clock = FakeClock()
    seen: list[str] = []
    handle = clock.call_at(1, lambda: seen.append("cancelled"))
    handle.cancel()
    clock.call_at(2, lambda: clock.call_at(3, lambda: seen.append("chained")))
    clock.advance(5)
    assert seen == ["chained"]
    assert clock.now() == 5
    with pytest.raises(ValueError):
        clock.advance(-1)


async def test_real_clock_calls_back_on_the_loop() -> None:
    clock = RealClock()
    fired = asyncio.Event()
    start = clock.now()
    clock.call_at(start + 0.02, fired.set)
    await asyncio.wait_for(fired.wait(), 60)  # a hang guard
    assert clock.now() - start >= 0.015
    handle = clock.call_at(clock.now() + 0.01, lambda: pytest.fail("cancelled timer fired"))
    handle.cancel()
    await asyncio.sleep(0.03)
