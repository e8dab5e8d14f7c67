"""The stack's floor, for bench_floor.py: what the libraries escalate is built on cost by
themselves, with none of escalate's code. One fresh process per call, one JSON line out
({"done": time.time() when the first turn is done, "cpu": its CPU seconds, "rss_kb": its RSS then}):

    python floor_stack.py adk DB       # ADK alone: imports, one LlmAgent turn (a model of one
                                       # text part, through `LlmAgent.run_async` on an
                                       # InvocationContext as escalate drives it), in memory
    python floor_stack.py adk-dbos DB  # the same after DBOS launched on the SQLite file DB
                                       # (SQLAlchemy, psycopg and DBOS imported, as every
                                       # durable escalate process has them)

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


def launch_dbos(db: str) -> None:
    from dbos import DBOS

    logging.getLogger("dbos").setLevel(logging.ERROR)
    DBOS(config={"name": "floor", "system_database_url": f"sqlite:///{db}", "run_admin_server": False,
                 "log_level": "ERROR"})
    DBOS.launch()


async def one_turn() -> None:
    from google.adk.agents import LlmAgent
    from google.adk.agents.invocation_context import InvocationContext, new_invocation_context_id
    from google.adk.agents.run_config import RunConfig
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_response import LlmResponse
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    class OneReply(BaseLlm):
        async def generate_content_async(self, llm_request, stream=False):  # type: ignore[no-untyped-def]
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="reply 1")]))

    agent = LlmAgent(name="echo", model=OneReply(model="scripted"))
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="floor", user_id="user")
    context = InvocationContext(session_service=sessions, invocation_id=new_invocation_context_id(), agent=agent,
                                session=session, run_config=RunConfig(),
                                user_content=types.Content(role="user", parts=[types.Part(text="go")]))
    replies = [event async for event in agent.run_async(context)]
    assert replies and replies[-1].content.parts[0].text == "reply 1", replies


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main(mode: str, db: str) -> None:
    # No collection while the libraries import, as every escalate command starts
    # (docs/startup.md): its passes over the imports' objects are not the libraries' cost.
    gc.disable()
    logging.disable(logging.WARNING)  # ADK warns of the missing token counts each turn
    if mode == "adk-dbos":
        launch_dbos(db)
    elif mode != "adk":
        raise SystemExit(f"unknown mode {mode!r}")
    asyncio.run(one_turn())
    gc.enable()
    print(json.dumps({"done": time.time(), "cpu": time.process_time(), "rss_kb": rss_kb()}), flush=True)
    if mode == "adk-dbos":
        from dbos import DBOS

        DBOS.destroy()


if __name__ == "__main__":
    main(*sys.argv[1:3])
