"""`desk.minted` records an escalation's id and raise time with the step-recording function its
caller gives (the engine's: engine/durable/steps.py keyed_step); escalation never imports the
durable layer for it."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import Any

import engine.escalation
from engine.escalation.desk import minted, unrecorded
from engine.kernel.clock import FakeClock
from esc_helpers import make_escalation


async def test_an_escalation_without_id_takes_the_recorded_steps_key_and_is_raised_inside_it() -> None:
    calls: list[str] = []

    async def record(name: str, fn: Any) -> Any:
        calls.append(f"step {name}")
        result = await fn("r7.3")
        calls.append("recorded")
        return result

    def raise_now(esc: Any) -> Any:
        calls.append(f"raised {esc.id}")
        return esc

    esc = await minted(replace(make_escalation(), id=""), FakeClock(50.0), record, raise_now)
    assert (esc.id, esc.created_at) == ("r7.3", 50.0)
    assert calls == ["step escalation", "raised r7.3", "recorded"]


async def test_a_replayed_step_gives_the_recorded_id_and_time_without_raising_again() -> None:
    async def replay(name: str, fn: Any) -> Any:
        return ["r7.3", 12.0]  # what the record holds: fn is not called

    esc = await minted(replace(make_escalation(), id=""), FakeClock(50.0), replay, lambda e: 1 / 0)
    assert (esc.id, esc.created_at) == ("r7.3", 12.0)


async def test_outside_a_durable_run_the_id_is_the_process_own() -> None:
    esc = await minted(replace(make_escalation(), id=""), FakeClock(50.0), unrecorded)
    assert esc.id.startswith("esc-") and esc.created_at == 50.0


def test_no_escalation_module_imports_the_durable_layer() -> None:
    folder = Path(engine.escalation.__file__).parent
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {name}" for name in names if name.startswith("engine.durable")]
    assert found == []
