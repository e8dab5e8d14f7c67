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
from pathlib import Path
from typing import Any


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


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main(mode: str, arg: str) -> None:
    # No collection while the libraries import, as every escalate command starts
    # (docs/startup.md): its passes over the imports' objects are not the libraries' cost.
    gc.disable()
    logging.disable(logging.WARNING)  # ADK warns of the missing token counts each turn
    if mode == "turns":
        gc.enable()
        print(json.dumps(asyncio.run(cpu_per_turn(int(arg)))), flush=True)
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
    main(*sys.argv[1:3])
