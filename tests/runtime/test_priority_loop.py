"""PriorityLoop: the console's callbacks come before the runs' ones, runs always move on, and an
answer wakes the run that waited for it ahead of the others."""

from __future__ import annotations

import asyncio
import contextvars
import time
from typing import Any, Callable

import pytest

from engine.runtime.priority_loop import BACKGROUND, PriorityLoop


def background() -> contextvars.Context:
    context = contextvars.copy_context()
    context.run(BACKGROUND.set, True)
    return context


def run(main: Callable[[PriorityLoop], Any], **loop_options: Any) -> Any:
    loop = PriorityLoop(**loop_options)
    try:
        return loop.run_until_complete(main(loop))
    finally:
        loop.close()


def test_console_callbacks_run_before_queued_run_work() -> None:
    order: list[str] = []

    async def main(loop: PriorityLoop) -> None:
        ctx = background()
        for n in range(3):
            loop.call_soon(order.append, f"run{n}", context=ctx)
        loop.call_soon(order.append, "console")
        await asyncio.sleep(0.01)

    run(main)
    # The slice already queued runs one step (runs always move on), then the console goes first.
    assert order == ["run0", "console", "run1", "run2"]


def test_a_slice_yields_to_console_work_that_a_run_step_posts() -> None:
    order: list[str] = []

    async def main(loop: PriorityLoop) -> None:
        ctx = background()

        def step(n: int) -> None:
            order.append(f"run{n}")
            if n == 0:  # a run posting a message wakes a widget's task, in the widget's context
                loop.call_soon(order.append, "console", context=contextvars.Context())

        for n in range(4):
            loop.call_soon(step, n, context=ctx)
        await asyncio.sleep(0.01)

    run(main, slice_seconds=10.0)  # only the console's work may end this slice
    assert order[:2] == ["run0", "console"]
    assert order[2:] == ["run1", "run2", "run3"]


def test_a_slice_yields_to_a_timer_that_falls_due() -> None:
    """The console's next frame is a timer: it goes ahead of the run work still queued."""
    order: list[str] = []

    async def main(loop: PriorityLoop) -> None:
        ctx = background()
        loop.call_at(loop.time() + 0.005, order.append, "frame")

        def step(n: int) -> None:
            if n == 0:
                time.sleep(0.01)  # a long run step: the frame's timer is due when it ends
            order.append(f"run{n}")

        for n in range(4):
            loop.call_soon(step, n, context=ctx)
        await asyncio.sleep(0.05)

    run(main, slice_seconds=10.0)  # only a timer may end this slice
    # The next slice runs its one step (runs always move on), then the frame comes before the rest.
    assert order == ["run0", "run1", "frame", "run2", "run3"]


def test_runs_move_on_while_the_console_is_busy() -> None:
    """Console work that reschedules itself every turn still leaves a run step per turn."""
    done: list[int] = []

    async def main(loop: PriorityLoop) -> None:
        ctx = background()
        for n in range(5):
            loop.call_soon(done.append, n, context=ctx)
        for _ in range(20):
            await asyncio.sleep(0)  # a busy console: foreground work in every turn

    run(main)
    assert done == [0, 1, 2, 3, 4]


def test_a_slice_ends_after_its_time() -> None:
    turns: list[int] = []

    async def main(loop: PriorityLoop) -> None:
        ctx = background()
        for n in range(50):
            loop.call_soon(lambda n=n: (turns.append(loop.slices), sum(range(20_000))), context=ctx)
        await asyncio.sleep(0.5)

    run(main, slice_seconds=0.001)
    assert len(set(turns)) > 1  # the 50 steps took several slices
    assert len(turns) == 50


def test_cancelled_run_callbacks_do_not_run() -> None:
    ran: list[str] = []

    async def main(loop: PriorityLoop) -> None:
        handle = loop.call_soon(ran.append, "cancelled", context=background())
        loop.call_soon(ran.append, "kept", context=background())
        handle.cancel()
        await asyncio.sleep(0.01)

    run(main)
    assert ran == ["kept"]


def test_a_failing_run_callback_reaches_the_exception_handler() -> None:
    seen: list[dict[str, Any]] = []

    async def main(loop: PriorityLoop) -> None:
        loop.set_exception_handler(lambda _loop, context: seen.append(context))
        loop.call_soon(lambda: 1 / 0, context=background())
        loop.call_soon(seen.append, {"after": True}, context=background())
        await asyncio.sleep(0.01)

    run(main)
    assert isinstance(seen[0]["exception"], ZeroDivisionError)
    assert seen[1] == {"after": True}  # the queue goes on


def test_tasks_a_run_starts_are_run_work() -> None:
    seen: list[bool] = []

    async def main(loop: PriorityLoop) -> None:
        async def child() -> None:
            seen.append(BACKGROUND.get())

        async def run_task() -> None:
            await asyncio.ensure_future(child())

        await loop.create_task(run_task(), context=background())

    run(main)
    assert seen == [True]


def test_an_answer_wakes_the_run_that_waited_for_a_human_ahead_of_run_work() -> None:
    """`human.wait` clears BACKGROUND while it waits: the answer's wakeup is console work."""
    order: list[str] = []

    async def main(loop: PriorityLoop) -> None:
        answer: asyncio.Future[str] = loop.create_future()

        async def asks() -> None:
            token = BACKGROUND.set(False)
            try:
                order.append(await answer)
            finally:
                BACKGROUND.reset(token)

        asker = loop.create_task(asks(), context=background())
        await asyncio.sleep(0.01)  # it waits
        ctx = background()
        for n in range(5):
            loop.call_soon(order.append, f"run{n}", context=ctx)
        answer.set_result("answered")
        await asker
        await asyncio.sleep(0.01)

    run(main)
    assert order == ["run0", "answered", "run1", "run2", "run3", "run4"]


@pytest.mark.parametrize("threadsafe", [True, False])
def test_a_key_from_another_thread_is_console_work(threadsafe: bool) -> None:
    order: list[str] = []

    async def main(loop: PriorityLoop) -> None:
        ctx = background()

        def step(n: int) -> None:
            order.append(f"run{n}")
            if n == 0:
                schedule = loop.call_soon_threadsafe if threadsafe else loop.call_soon
                schedule(order.append, "key", context=contextvars.Context())

        for n in range(3):
            loop.call_soon(step, n, context=ctx)
        await asyncio.sleep(0.01)

    run(main, slice_seconds=10.0)
    assert order == ["run0", "key", "run1", "run2"]


def test_a_console_always_busy_still_gives_runs_a_whole_slice() -> None:
    """A console with work due at every loop turn (the frames of many streaming agents) cuts
    each slice to one run step; once that has lasted FLOOR seconds, runs get a whole slice."""
    done: list[int] = []

    async def main(loop: PriorityLoop) -> None:
        ctx = background()
        for n in range(1000):
            loop.call_soon(done.append, n, context=ctx)
        end = time.perf_counter() + 0.3

        def frame() -> None:  # console work, due again at once
            time.sleep(0.002)
            if time.perf_counter() < end:
                loop.call_soon(frame)

        loop.call_soon(frame)
        while time.perf_counter() < end:
            await asyncio.sleep(0)

    run(main)
    assert len(done) == 1000  # one step a turn would be about a hundred
