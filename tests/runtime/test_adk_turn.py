"""An agent call with no delegates runs its agent without ADK's node runtime (engine/runtime/adk_turn.py):
the same events in the session as through `Runner.run_async`, pauses included (what a turn no longer
builds: tests/runtime/test_turn_overhead.py)."""

from __future__ import annotations

from typing import Any

from google.adk.agents import LlmAgent
from google.adk.runners import Runner
from google.genai import types

from engine.runtime import adk_turn
from engine.runtime.agents import ask_human_tool
from engine.runtime.script import parse_script
from engine.runtime.script_cursor import ScriptCursor
from engine.runtime.scripted_model import scripted_model
from engine.runtime.sessions import CallSessions

SCRIPT = """agents:
  a:
    - tool: ask_human
      args: {question: "Which one?"}
    - 'the answer was {}'
"""


def _runner(**agent: Any) -> Runner:
    model = scripted_model("a", ScriptCursor(parse_script(SCRIPT)))
    root = LlmAgent(name="a", model=model, instruction="Answer.", tools=[ask_human_tool()], **agent)
    return Runner(app_name="app", agent=root, session_service=CallSessions())


async def _conversation(traced: bool) -> list[tuple[str, str, list[str]]]:
    """A call that pauses on ask_human and is answered, through the Runner (traced) or directly."""
    runner = _runner()
    session = await runner.session_service.create_session(app_name="app", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text="go")])
    paused = []
    for _ in range(2):
        async for event in adk_turn.run_async(runner, user_id="u", session_id=session.id, new_message=message,
                                              run_config=None, traced=traced):
            paused += [c for c in event.get_function_calls() if c.id in (event.long_running_tool_ids or set())]
        if not paused:
            break
        call = paused.pop()
        message = types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
            id=call.id, name=call.name, response={"decision": "the second"}))])
    stored = await runner.session_service.get_session(app_name="app", user_id="u", session_id=session.id)

    def parts(content: Any) -> list[str]:
        out = []
        for part in content.parts if content is not None else []:
            if part.function_call:
                out.append(f"call {part.function_call.name} {part.function_call.args}")
            elif part.function_response:
                out.append(f"response {part.function_response.name} {part.function_response.response}")
            elif part.text:
                out.append(part.text)
        return out

    return [(e.author, e.content.role if e.content else "", parts(e.content)) for e in stored.events if e.content]


async def test_a_direct_call_leaves_the_session_the_runner_leaves() -> None:
    direct, through_runner = await _conversation(False), await _conversation(True)
    assert direct == through_runner
    assert [author for author, _, _ in direct] == ["user", "a", "user", "a"]
    assert direct[1][2][0].startswith("call ask_human") and direct[-1][2] == ["the answer was {}"]


def test_delegates_plugins_and_telemetry_keep_the_runner() -> None:
    assert adk_turn.runs_directly(_runner(), traced=False)
    assert not adk_turn.runs_directly(_runner(), traced=True)  # OpenTelemetry set up: its invocation spans
    helper = LlmAgent(name="helper", model=scripted_model("helper", ScriptCursor(parse_script(SCRIPT))))
    assert not adk_turn.runs_directly(_runner(sub_agents=[helper]), traced=False)  # the Runner routes messages
    from google.adk.plugins import BasePlugin

    with_plugin = _runner()
    with_plugin.plugin_manager.register_plugin(BasePlugin(name="p"))
    assert not adk_turn.runs_directly(with_plugin, traced=False)
