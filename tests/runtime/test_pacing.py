"""Pacing: runs sharing a loop with the console leave it room when they saturate the CPU, and
hold back while the user acts; runs that mostly wait are never held."""

from __future__ import annotations

from pathlib import Path

import pytest

import engine.runtime.pacing as pacing
from engine.runtime.engine import CompiledWorkflow, RunStatus
from engine.runtime.pacing import Pacer
from tests.runtime.test_runs import OneAgent


class Times:
    """Wall and CPU time that only move when the test says so."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.cpu = 5.0

    def spend(self, wall: float, cpu: float) -> None:
        self.wall += wall
        self.cpu += cpu


@pytest.fixture
def slept(monkeypatch) -> list[float]:
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(round(seconds, 6))

    monkeypatch.setattr(pacing.asyncio, "sleep", sleep)
    return delays


def pacer(times: Times) -> Pacer:
    return Pacer(quantum=0.02, saturated=0.8, breath=0.02, wall=lambda: times.wall, cpu=lambda: times.cpu)


async def test_runs_that_wait_on_models_are_never_held(slept: list[float]) -> None:
    times = Times()
    p = pacer(times)
    for _ in range(50):
        times.spend(wall=0.5, cpu=0.004)  # a model call: half a second on the network
        await p.turn()
    assert slept == [] and p.breaths == 0


async def test_a_saturated_quantum_gives_the_loop_a_breath(slept: list[float]) -> None:
    times = Times()
    p = pacer(times)
    times.spend(wall=0.01, cpu=0.01)
    await p.turn()  # not a whole quantum yet
    assert slept == []
    times.spend(wall=0.015, cpu=0.015)
    await p.turn()
    assert slept == [0.02] and p.breaths == 1
    await p.turn()  # another run arriving during the breath waits for its end
    assert slept == [0.02, 0.02]
    times.spend(wall=0.03, cpu=0.0)  # the breath passed and the thread was idle
    await p.turn()
    assert slept == [0.02, 0.02] and p.breaths == 1


async def test_a_hold_keeps_model_steps_back(slept: list[float]) -> None:
    times = Times()
    p = pacer(times)
    p.hold(0.05)
    times.spend(wall=0.01, cpu=0.0)
    await p.turn()
    assert slept == [0.04]
    times.spend(wall=0.05, cpu=0.0)
    await p.turn()
    assert slept == [0.04]


async def test_release_ends_a_hold(slept: list[float]) -> None:
    times = Times()
    p = pacer(times)
    p.hold(0.05)
    p.release()
    await p.turn()
    assert slept == []


class CountingPacer(Pacer):
    def __init__(self) -> None:
        super().__init__()
        self.turns = 0

    async def turn(self) -> None:
        self.turns += 1
        await super().turn()


async def test_every_model_step_of_a_run_takes_its_turn(harness, tmp_path: Path) -> None:
    engine = harness.engine("agents:\n  worker:\n    - 'hello back'\n")
    engine.pacer = counting = CountingPacer()
    handle = engine.start_run(CompiledWorkflow(Path("wf.sr"), "wf", OneAgent), input="hi")
    await handle.wait()
    assert handle.status is RunStatus.DONE, handle.error
    assert handle.result == "hello back"
    assert counting.turns == 2  # the agent call, then its one model step


async def test_headless_runs_have_no_pacer(harness) -> None:
    assert harness.engine("agents: {}\n").pacer is None
