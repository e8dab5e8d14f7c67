"""What a run waiting for a person holds in its process (issue 26): objects counted, not timed.

Runs of one workflow are brought to their approval in one process, first a few, then more;
the objects of the kinds that need not belong to a run must not grow with the number waiting.
"""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from engine.lang.compiler import compile_source, workflow_class
from engine.runtime.engine import CompiledWorkflow, RunStatus

SOURCE = '''prompt p: """Do the next step of the task."""
agent worker:
    instruction p
flow main:
    $x = run agent worker $input
    return $x
'''
SCRIPT = """
agents:
  worker:
    - escalate: {reason: architecture_decision, question: 'Go on?', options: [{id: go, label: Go}]}
    - done
"""


def ask_human_tools() -> tuple[int, int]:
    """(agents alive, distinct ask_human tools among them)."""
    from google.adk.agents import LlmAgent

    gc.collect()
    agents = [o for o in gc.get_objects() if isinstance(o, LlmAgent)]
    return len(agents), len({id(t) for a in agents for t in a.tools if getattr(t, "name", "") == "ask_human"})


async def bring_to_approval(engine, workflow: CompiledWorkflow, total: int) -> None:
    while len(engine.runs) < total:
        engine.start_run(workflow, input="go")
    for _ in range(2000):
        if sum(1 for h in engine.runs if h.status is RunStatus.WAITING) == total and len(engine.broker.pending()) == total:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{total} runs did not all reach their approval")


async def test_waiting_runs_share_one_ask_human_tool(harness, tmp_path: Path) -> None:
    """Every agent of every run is given `ask_human`; the tool holds nothing of a run, so one
    is built for the process (before: one per agent per run, its signature read each time)."""
    engine = harness.engine(SCRIPT)
    workflow = CompiledWorkflow(Path("wf.sr"), "wf", workflow_class(compile_source(SOURCE, Path("wf.sr"))))
    await bring_to_approval(engine, workflow, 2)
    few = ask_human_tools()
    await bring_to_approval(engine, workflow, 8)
    many = ask_human_tools()
    assert (few[0], many[0]) == (2, 8)  # one agent per waiting run
    assert (few[1], many[1]) == (1, 1)
    for handle in engine.runs:
        handle.cancel()
    await asyncio.gather(*(handle.wait() for handle in engine.runs))
