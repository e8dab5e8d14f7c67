"""The console's tests run on the loop `escalate` runs the console on (EscalateApp.run)."""

from __future__ import annotations

from engine.runtime.priority_loop import PriorityLoop


def pytest_asyncio_loop_factories(config, item):  # noqa: ANN001, ANN201 (pytest-asyncio's hook)
    return {"priority": PriorityLoop}
