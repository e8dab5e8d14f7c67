"""Agents run from inside a tool (a `use` child, an `escalate_to_agent` target) never wait for a
person there: a human wait happens at one level only, the flow's.

Such a call runs as a task of its own. When it needs a decision, the one wait (human.py `wait`)
hands it up (`ChildCall.hand_up`) and its tool returns nothing, which pauses the calling agent on that tool call
(ADK's long-running pause). The caller's agent call, at the flow level, then takes the child's
waits one by one (`settle`), lets the child go on, and answers the paused tool call with the
child's result: the same way it answers an `ask_human` pause. Nested children hand their waits
up the same way, level by level.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from engine.runtime.human import Wait, wait, waits_handed_to

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

T = TypeVar("T")


@dataclass
class _Ask:
    make: Wait
    answer: "asyncio.Future[Any]"


@dataclass
class ChildCall:
    """One agent call started inside a tool, in a task of its own."""

    run: "RunState"
    task: "asyncio.Task[Any] | None" = None
    _asks: list[_Ask] = field(default_factory=list)
    _asked: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    def start(cls, run: "RunState", call: Callable[[], Awaitable[Any]]) -> "ChildCall":
        child = cls(run)
        with waits_handed_to(child):  # the task copies the context now: its steps stay the run's
            child.task = asyncio.get_running_loop().create_task(call(), name="escalate child call")
        return child

    async def hand_up(self, make: Wait) -> Any:
        ask = _Ask(make, asyncio.get_running_loop().create_future())
        self._asks.append(ask)
        self._asked.set()
        return await ask.answer

    async def first_stop(self) -> bool:
        """Run until the child ends (True) or asks for a person (False)."""
        assert self.task is not None
        asking = asyncio.ensure_future(self._asked.wait())
        try:
            await asyncio.wait([self.task, asking], return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self.cancel()
            raise
        finally:
            asking.cancel()
        return self.task.done() and not self._asks

    async def settle(self) -> Any:
        """At the level above: do the child's waits until it ends; its result (or its error)."""
        assert self.task is not None
        try:
            while True:
                if not self._asks:
                    self._asked.clear()
                    if await self.first_stop():
                        return self.task.result()
                    continue
                ask = self._asks.pop(0)
                try:
                    ask.answer.set_result(await wait(self.run, ask.make))
                except BaseException as exc:  # the child gets the failure (a stop, a cancel) too
                    if not ask.answer.done():
                        ask.answer.set_exception(exc)
                    raise
        except asyncio.CancelledError:
            self.cancel()
            raise

    def cancel(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()


async def call_in_tool(run: "RunState", call_id: str | None, call: Callable[[], Awaitable[T]]) -> T | None:
    """Run an agent call from a tool: its result, or None after parking it under the tool's
    call id when it waits for a person (the tool then returns nothing: the caller pauses)."""
    child = ChildCall.start(run, call)
    if await child.first_stop():
        return child.task.result()  # type: ignore[union-attr]
    if call_id is None:  # no call to pause on (not a tool): the wait happens here after all
        return await child.settle()
    run.suspended[call_id] = child
    return None
