"""The stack's floor, for bench_floor.py: what the libraries escalate is built on cost by
themselves, with none of escalate's code. One fresh process per call, one JSON line out
({"done": time.time() when the first turn is done, "cpu": its CPU seconds, "rss_kb": its RSS then}):

    python floor_stack.py adk DB       # ADK alone: imports, one LlmAgent turn (a model of one
                                       # text part, through `LlmAgent.run_async` on an
                                       # InvocationContext as escalate drives it), in memory
    python floor_stack.py adk-dbos DB  # the same after DBOS launched on the SQLite file DB
                                       # (SQLAlchemy, psycopg and DBOS imported, as every
                                       # durable escalate process has them)
    python floor_stack.py turns N      # CPU ms a turn in memory, a long loop's minus a short
                                       # one's: {"bare": the agent above, "shaped": the same
                                       # agent shaped as escalate's (below)}
    python floor_stack.py runs N [DB]  # N runs one after another, each one turn of the shaped
                                       # agent, in memory, or (DB given) each a DBOS workflow
                                       # whose turn is a DBOS step, as a run's execution that
                                       # ends at its approval: {"cpu_ms": a run, "kb": RSS a
                                       # run after a collection, "objects_kb": pymalloc's}

The turns use ADK's telemetry settings escalate gives a process without OpenTelemetry
(engine/runtime/agent_call.py `_telemetry`), cheaper than ADK's defaults. "shaped": what every
agent of escalate asks of ADK beyond the bare one: a long-running `ask_human` tool, a
before- and an after-model callback (doing nothing here), a reply that carries its token usage.

DB is only used by `adk-dbos`. Nothing is recorded and no person is asked: a floor, not a run.
The collector is off until the turn is done, as in escalate's own start-up; escalate also leaves
out ADK's unused extras and defers its pydantic builds (docs/startup.md), which this plain use
of the libraries does not, so escalate's whole `run` can cost less CPU than this row.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
import time
from typing import Any

from peer_langgraph import pymalloc_kb, rss_kb


def launch_dbos(db: str) -> None:
    from dbos import DBOS

    logging.getLogger("dbos").setLevel(logging.ERROR)
    DBOS(config={"name": "floor", "system_database_url": f"sqlite:///{db}", "run_admin_server": False,
                 "log_level": "ERROR"})
    DBOS.launch()


def agent(*, shaped: bool) -> Any:
    """The one-reply agent, bare or shaped as escalate's."""
    from google.adk.agents import LlmAgent
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.tools import LongRunningFunctionTool
    from google.genai import types

    usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=12, candidates_token_count=3,
                                                       total_token_count=15) if shaped else None

    class OneReply(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):  # type: ignore[no-untyped-def]
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="reply 1")]),
                              usage_metadata=usage)

    if not shaped:
        return LlmAgent(name="echo", model=OneReply(model="escalate/scripted"))

    def ask_human(question: str) -> None:
        """Ask a human to decide."""
        return None

    async def before_model(callback_context: Any, llm_request: Any) -> None:
        return None

    async def after_model(callback_context: Any, llm_response: Any) -> None:
        return None

    return LlmAgent(name="echo", model=OneReply(model="escalate/scripted"), tools=[LongRunningFunctionTool(ask_human)],
                    before_model_callback=before_model, after_model_callback=after_model)


async def one_turn(the_agent: Any) -> None:
    from google.adk.agents.invocation_context import InvocationContext, new_invocation_context_id
    from google.adk.agents.run_config import RunConfig
    from google.adk.sessions import InMemorySessionService
    from google.adk.telemetry import ContentCapturingMode, TelemetryConfig
    from google.genai import types

    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="floor", user_id="user")
    telemetry = TelemetryConfig(genai_semconv_stability_opt_in="stable", adk_experimental_telemetry_opt_in=False,
                                capture_message_content=ContentCapturingMode.NO_CONTENT)
    context = InvocationContext(session_service=sessions, invocation_id=new_invocation_context_id(), agent=the_agent,
                                session=session, run_config=RunConfig(telemetry=telemetry),
                                user_content=types.Content(role="user", parts=[types.Part(text="go")]))
    replies = [event async for event in the_agent.run_async(context)]
    assert replies and replies[-1].content.parts[0].text == "reply 1", replies


SHORT = 5  # turns of the short loop whose CPU is subtracted from a long one's (as peer_langgraph.py)


async def cpu_per_turn(turns: int) -> dict[str, float]:
    """CPU milliseconds a turn of each agent, a long loop's minus a short one's, warmed up."""
    result = {}
    for name in ("bare", "shaped"):
        the_agent = agent(shaped=name == "shaped")

        async def loop(count: int) -> float:
            cpu = time.process_time()
            for _ in range(count):
                await one_turn(the_agent)
            return time.process_time() - cpu

        await loop(50)
        result[name] = (await loop(turns) - await loop(SHORT)) * 1000 / (turns - SHORT)
    return result


async def runs(count: int, db: str | None) -> dict[str, float]:
    """`count` runs one after another, what each costs and leaves (after 5 unmeasured)."""
    the_agent = agent(shaped=True)
    if db is None:
        async def one(number: int) -> None:
            await one_turn(the_agent)
    else:
        from dbos import DBOS

        launch_dbos(db)

        @DBOS.step()
        async def turn() -> None:
            await one_turn(the_agent)

        @DBOS.workflow()
        async def run(number: int) -> None:
            await turn()

        async def one(number: int) -> None:
            await (await DBOS.start_workflow_async(run, number)).get_result()

    for number in range(5):
        await one(number)
    gc.collect()
    heap, before, cpu = pymalloc_kb()["objects"], rss_kb(), time.process_time()
    for number in range(count):
        await one(5 + number)
    cpu = time.process_time() - cpu
    gc.collect()
    return {"cpu_ms": cpu * 1000 / count, "kb": (rss_kb() - before) / count,
            "objects_kb": (pymalloc_kb()["objects"] - heap) / count}


def main(mode: str, arg: str, db: str | None = None) -> None:
    # No collection while the libraries import, as every escalate command starts
    # (docs/startup.md): its passes over the imports' objects are not the libraries' cost.
    gc.disable()
    logging.disable(logging.WARNING)  # ADK warns of the missing token counts each turn
    if mode in ("turns", "runs"):
        gc.enable()
        work = cpu_per_turn(int(arg)) if mode == "turns" else runs(int(arg), db)
        print(json.dumps(asyncio.run(work)), flush=True)
        if db is not None:
            from dbos import DBOS

            DBOS.destroy()
        return
    if mode == "adk-dbos":
        launch_dbos(arg)
    elif mode != "adk":
        raise SystemExit(f"unknown mode {mode!r}")
    asyncio.run(one_turn(agent(shaped=False)))
    gc.enable()
    print(json.dumps({"done": time.time(), "cpu": time.process_time(), "rss_kb": rss_kb()}), flush=True)
    if mode == "adk-dbos":
        from dbos import DBOS

        DBOS.destroy()


if __name__ == "__main__":
    main(*sys.argv[1:4])
