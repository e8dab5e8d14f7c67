"""The console warms the runtime up on a thread after its first frame: one real scripted run."""

from __future__ import annotations

import asyncio
import sys

from engine.runtime.engine import warm_up


async def test_warm_up_runs_one_scripted_call_off_the_loop() -> None:
    await asyncio.to_thread(warm_up)  # raises if the warm-up run does not end done
    assert "google.adk.runners" in sys.modules and "engine.runtime.scripted_model" in sys.modules
