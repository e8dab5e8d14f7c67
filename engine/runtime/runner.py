"""One run from start to end: entry point, `on start` handlers, the flow, the final status."""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from engine.runtime.context import RunContext
from engine.runtime.events import EventSink
from engine.flow.flow_api import AbortFlow, FlowError, StopTask
from engine.runtime.handlers import run_handlers
from engine.runtime.run_state import RunState
from engine.runtime.run_status import RunStatus
from engine.runtime.script import Script
from engine.runtime.tools.workspace import Workspace

if TYPE_CHECKING:
    from engine.runtime.engine import CompiledWorkflow, Engine, RunHandle

log = logging.getLogger("escalate.runtime")


async def execute_run(
    engine: "Engine", handle: "RunHandle", workflow: "CompiledWorkflow", sink: EventSink, script: Script | None,
    *, durable: bool = False,
) -> None:
    instance = workflow.cls()
    run = RunState(
        run_id=handle.id,
        task=handle.task,
        workflow=instance,
        script=script if script is not None else Script.empty(),
        script_given=script is not None,
        workspace=Workspace(handle.workspace or engine.workspace),
        sink=sink,
        desk=engine.desk,
        agent_policy=engine.agent_policy,
        clock=engine.clock,
        on_waiting=handle.set_waiting,
        on_tokens=handle.set_tokens,
        durable=durable,
    )
    wire(run)
    context = RunContext(run, handle.input)
    run.context = context
    status, error, result = RunStatus.FAILED, None, None
    try:
        try:
            result = await _run_entry(run, context, handle)
            status = RunStatus.DONE
        except BaseException as exc:
            handle.exception = exc
            raise
    except StopTask as exc:
        status, error = RunStatus.STOPPED, str(exc) or "stopped by a rule"
    except AbortFlow as exc:
        status, error = RunStatus.ABORTED, _located(exc, str(exc) or "aborted")
    except asyncio.CancelledError:
        if handle.detached:  # the process stops, the run does not: nothing is recorded as its end
            raise
        status, error = RunStatus.CANCELLED, "cancelled"
    except FlowError as exc:
        status, error = RunStatus.FAILED, _located(exc, str(exc))
    except LookupError as exc:
        status, error = RunStatus.FAILED, str(exc.args[0]) if exc.args else str(exc)
    except Exception as exc:  # an unexpected failure still ends the run cleanly, with its reason
        log.debug("run %s failed", handle.id, exc_info=True)
        status, error = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
    finally:
        if not handle.detached:
            handle.result = result
            handle.error = error
            handle.finished_at = engine.clock.now()
            if status is RunStatus.DONE:
                sink.emit("flow_result", result=result)
            elif error:
                sink.emit("log", message=f"run {status.value}" + ("" if error == status.value else f": {error}"), level="error")
            handle.status = status
        try:
            await asyncio.shield(run.close())
        except asyncio.CancelledError:  # cancelled again while closing: the run is over anyway
            pass


def wire(run: RunState) -> None:
    """Give the run its services: the one agent-call function and the one decision function
    (which goes through the one wait for a person, engine/runtime/human.py)."""
    from engine.runtime.agent_call import call_agent
    from engine.runtime.human import decide

    run.call_agent = partial(call_agent, run)
    run.decide = partial(decide, run)


async def _run_entry(run: RunState, context: RunContext, handle: "RunHandle") -> Any:
    kind, name = run.workflow.entry(handle.flow)
    await run_handlers(run, None, "start", {"input": handle.input}, subject=handle.input)
    if kind == "flow":
        return (await context.run_flow(name, [handle.input], line=0)).value
    return (await context.run_agent(name, [handle.input], line=0)).value


def _located(exc: Exception, message: str) -> str:
    line = getattr(exc, "line", 0)
    return f"line {line}: {message}" if line else message
