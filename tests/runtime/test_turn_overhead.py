"""What an agent turn costs on the ADK side (issue 26), counted, not timed: each turn's sessions
in the run's own service (engine/runtime/sessions.py: light copies, no deep copy of the session at
each invocation), one RunConfig whose TelemetryConfig is built once (ADK built several a turn
without one, each reading the environment), tools that declare themselves once
(engine/runtime/tools/declared.py), and an agent with no delegates run without ADK's node runtime
(engine/runtime/adk_turn.py: no agent clone, no `Runner.run_async`), and from the sixth pass: the
script cursor looking from its first unused reply, no call id drawn for a text reply, the call's
stored session driven (no copy a turn)."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.adk.events import Event, EventActions
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

from engine.lang.compiler import compile_source, workflow_class
from engine.runtime.engine import CompiledWorkflow, RunStatus
from tests.durable.test_turn_cost import FLOW  # the same echo loop, its turns counted


def event(text: str, at: float, **actions: object) -> Event:
    return Event(author="echo", invocation_id="i", timestamp=at, actions=EventActions(**actions),
                 content=types.Content(role="model", parts=[types.Part.from_text(text=text)]))


async def test_the_run_s_sessions_hand_out_light_copies_that_keep_adk_s_meaning() -> None:
    """The same calls on ADK's in-memory service and on ours give the same sessions; ours shares
    the events (no deep copy) and never lets a caller's list or state change the stored ones."""
    from engine.runtime.sessions import CallSessions

    ours, adk = CallSessions(), InMemorySessionService()
    got: dict[str, list[object]] = {}
    for name, service in (("ours", ours), ("adk", adk)):
        session = await service.create_session(app_name="a", user_id="u", session_id="s1", state={"k": 1})
        for i, at in enumerate((1.0, 2.0, 3.0)):
            await service.append_event(session, event(f"e{i}", at, state_delta={"n": i, "temp:t": i}))
        await service.append_event(session, Event(author="echo", invocation_id="i", partial=True))
        stale = await service.get_session(app_name="a", user_id="u", session_id="s1")
        await service.append_event(stale, event("e3", 4.0))  # through a copy: stored too
        whole = await service.get_session(app_name="a", user_id="u", session_id="s1")
        recent = await service.get_session(app_name="a", user_id="u", session_id="s1",
                                           config=GetSessionConfig(num_recent_events=2))
        after = await service.get_session(app_name="a", user_id="u", session_id="s1",
                                          config=GetSessionConfig(after_timestamp=2.5))
        whole.events.clear()
        whole.state["k"] = "changed by a caller"
        again = await service.get_session(app_name="a", user_id="u", session_id="s1")
        listed = await service.list_sessions(app_name="a", user_id="u")
        await service.delete_session(app_name="a", user_id="u", session_id="s1")
        gone = await service.get_session(app_name="a", user_id="u", session_id="s1")
        got[name] = [[e.content.parts[0].text for e in again.events], again.state, len(recent.events),
                     [e.content.parts[0].text for e in after.events], [s.id for s in listed.sessions], gone]
        if name == "ours":
            assert again.events[0] is stale.events[0]  # shared, not copied
    assert got["ours"] == got["adk"]
    assert got["ours"][0] == ["e0", "e1", "e2", "e3"] and got["ours"][1] == {"k": 1, "n": 2}


async def test_a_turn_builds_no_telemetry_config_and_deep_copies_no_session(harness, tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted over a run of 2 turns and one of 8 (a real Runner each turn): what grows with the
    turns. Before: 4 TelemetryConfigs and 2 session deep copies a turn."""
    import copy

    from google.adk.telemetry import TelemetryConfig

    built: list[int] = []
    post_init = TelemetryConfig.model_post_init
    monkeypatch.setattr(TelemetryConfig, "model_post_init", lambda self, context: (built.append(1), post_init(self, context))[1])
    deep_copies: list[int] = []
    deepcopy = copy.deepcopy

    def counted(value, memo=None, _nil=[]):  # noqa: B006  (copy.deepcopy's own signature)
        if type(value).__name__ == "Session":
            deep_copies.append(1)
        return deepcopy(value, memo)

    monkeypatch.setattr(copy, "deepcopy", counted)

    async def counts(turns: int) -> tuple[int, int]:
        built.clear()
        deep_copies.clear()
        script = "agents:\n  echo:\n" + "".join(f"    - 'reply {i}'\n" for i in range(turns))
        engine = harness.engine(script)
        cls = workflow_class(compile_source(FLOW.format(n=turns), Path("t.sr")))
        handle = engine.start_run(CompiledWorkflow(tmp_path / "t.sr", "t", cls), input="go")
        assert await handle.wait() is RunStatus.DONE, handle.error
        assert handle.result == f"reply {turns - 1}"
        return len(built), len(deep_copies)

    await counts(1)  # first-use costs
    few, many = await counts(2), await counts(8)
    assert many == few, f"per 6 more turns: {many[0] - few[0]} TelemetryConfigs, {many[1] - few[1]} session deep copies"


def _telemetry_settings(monkeypatch: pytest.MonkeyPatch, **environment: str) -> object:
    """The TelemetryConfig agent calls run with, in a process of this environment."""
    import os

    from engine.runtime import agent_call

    for name in list(os.environ):
        if name.startswith(("OTEL_", "ADK_EXPERIMENTAL_TELEMETRY")):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    agent_call._built_run_config.cache_clear()  # read once a process: read again here
    agent_call._traced.cache_clear()
    try:
        return agent_call._run_config().telemetry
    finally:
        agent_call._built_run_config.cache_clear()
        agent_call._traced.cache_clear()


def test_with_no_telemetry_set_up_a_turn_builds_no_span_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: ADK's default (its experimental GenAI conventions) built every request's and
    # reply's attributes, messages and tool declarations included, for spans that record
    # nothing: ~11% of a model turn's Python calls (bench_durable.py: 6,654 -> 5,806 a turn).
    from google.adk.telemetry import ContentCapturingMode

    quiet = _telemetry_settings(monkeypatch)
    assert quiet.should_use_experimental_genai_semconv is False
    assert quiet.capture_message_content is ContentCapturingMode.NO_CONTENT
    # set up by the environment: ADK's defaults and the environment decide, as before
    told = _telemetry_settings(monkeypatch, OTEL_SEMCONV_STABILITY_OPT_IN="gen_ai_latest_experimental")
    assert told.should_use_experimental_genai_semconv is True
    assert told.capture_message_content is None


def test_a_tracer_provider_set_keeps_adk_s_telemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: TracerProvider())  # as if set at start-up
    told = _telemetry_settings(monkeypatch)
    assert told.genai_semconv_stability_opt_in is None and told.capture_message_content is None


async def _per_turn(harness, tmp_path: Path, count) -> int:  # noqa: ANN001
    """What `count()` grows by over 6 more turns of the echo loop (a real Runner each turn),
    past the first-use costs."""

    async def counted(turns: int) -> int:
        script = "agents:\n  echo:\n" + "".join(f"    - 'reply {i}'\n" for i in range(turns))
        engine = harness.engine(script)
        cls = workflow_class(compile_source(FLOW.format(n=turns), Path("t.sr")))
        before = count()
        handle = engine.start_run(CompiledWorkflow(tmp_path / "t.sr", "t", cls), input="go")
        assert await handle.wait() is RunStatus.DONE, handle.error
        assert handle.result == f"reply {turns - 1}"
        return count() - before

    await counted(1)
    return await counted(8) - await counted(2)


async def test_a_turn_deep_copies_no_tool_declaration(harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: ADK's FunctionTool deep-copied its declaration for every tool at every turn
    # (~540 Python calls a turn for ask_human alone); now built once a tool, shallow-copied.
    copies: list[int] = []
    model_copy = types.FunctionDeclaration.model_copy

    def counted(self, *, update=None, deep=False):  # noqa: ANN001, ANN202
        if deep:
            copies.append(1)
        return model_copy(self, update=update, deep=deep)

    monkeypatch.setattr(types.FunctionDeclaration, "model_copy", counted)
    grown = await _per_turn(harness, tmp_path, lambda: len(copies))
    assert grown == 0, f"{grown} declarations deep-copied over 6 turns ({len(copies)} in all)"


def test_a_tool_built_once_declares_what_adk_declares_and_each_turn_gets_its_own() -> None:
    from google.adk.tools import FunctionTool, LongRunningFunctionTool

    from engine.runtime import callbacks
    from engine.runtime.tools.declared import DeclaredFunctionTool, DeclaredLongRunningTool
    from engine.runtime.tools.fs import fs_functions
    from engine.runtime.tools.workspace import Workspace

    read_file = fs_functions(Workspace(Path("/")), readonly=True)[0]  # a built-in tool's function

    for ours, adk in ((DeclaredLongRunningTool(callbacks.ask_human), LongRunningFunctionTool(callbacks.ask_human)),
                      (DeclaredFunctionTool(read_file), FunctionTool(read_file))):
        first = ours._get_declaration()
        assert first == adk._get_declaration()
        first.description += " (changed by one request)"  # as ADK changes a request's own copy
        first.name = "renamed"
        again = ours._get_declaration()
        assert again == adk._get_declaration() and again is not first
        assert ours.is_long_running == adk.is_long_running


async def test_an_agent_with_no_delegates_runs_without_adk_s_node_runtime(harness, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: Runner.run_async ran the root agent as a node of ADK's workflow runtime: a clone of
    # the agent (`build_node`), a scheduler and its tasks a turn; ~5,260 Python calls a scripted
    # turn -> ~3,710 (engine/runtime/adk_turn.py).
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.runners import Runner

    counts: list[str] = []
    clone, run_async = BaseAgent.clone, Runner.run_async
    monkeypatch.setattr(BaseAgent, "clone", lambda self, update=None: (counts.append("clone"), clone(self, update))[1])
    monkeypatch.setattr(Runner, "run_async", lambda self, **kw: (counts.append("runner"), run_async(self, **kw))[1])
    grown = await _per_turn(harness, tmp_path, lambda: len(counts))
    assert grown == 0, f"over 6 more turns: {grown} agent clones and Runner.run_async calls"


async def test_a_scripted_turn_in_memory_makes_fewer_python_calls(harness, tmp_path: Path) -> None:
    # Every Python and C function call on the run's thread, counted (sys.setprofile): ~5,800 a
    # scripted turn before the fifth pass (bench_durable.py), 3,393 here before the sixth (the
    # call's second session copy, a uuid4 a turn, ADK's telemetry working out Gemini's deployment
    # for the scripted model's bare name, the call's session copied), 3,293 after it.
    import sys

    calls = [0]

    def hook(frame, event, arg):  # noqa: ANN001, ANN202
        if event == "call" or event == "c_call":
            calls[0] += 1

    sys.setprofile(hook)
    try:
        grown = await _per_turn(harness, tmp_path, lambda: calls[0])
    finally:
        sys.setprofile(None)
    assert grown / 6 < 3330, f"{grown / 6:.0f} Python calls a turn"


def test_a_turn_reads_its_reply_without_going_over_the_used_ones() -> None:
    # Before: each turn looked for its reply from the top of the agent's list, past every reply
    # already used: a run of N turns read N²/2 of them (~20,000 at 200 turns, ~0.02 ms a turn).
    from engine.runtime.script import parse_script
    from engine.runtime.script_cursor import ScriptCursor

    class Counted(tuple):  # the agent's replies, counting those read
        read = 0

        def __iter__(self):  # noqa: ANN204
            for reply in tuple.__iter__(self):
                Counted.read += 1
                yield reply

        def __getitem__(self, index):  # noqa: ANN001, ANN204
            Counted.read += 1
            return tuple.__getitem__(self, index)

    turns = 200
    script = parse_script("agents:\n  echo:\n" + "".join(f"    - 'reply {i}'\n" for i in range(turns)))
    script.agents["echo"] = Counted(script.agents["echo"])
    cursor = ScriptCursor(script)
    cursor.mark_used("echo", 1)  # a replayed turn's reply, out of order
    got = [cursor.next_reply("echo", "go")[0] for _ in range(turns - 1)]
    assert got == [0, *range(2, turns)]  # still the first unused reply, each once
    assert Counted.read <= 3 * turns, f"{Counted.read} replies read over {turns} turns"


def test_a_text_turn_draws_no_call_id_and_a_tool_call_s_id_is_random() -> None:
    # Before: every scripted turn drew a uuid4 for a tool call's id, text replies too.
    from engine.runtime.script import parse_script
    from engine.runtime.scripted_model import ScriptCursor, reply_content

    drawn: list[str] = []

    class Cursor(ScriptCursor):
        @staticmethod
        def call_id(agent: str) -> str:
            drawn.append(ScriptCursor.call_id(agent))
            return drawn[-1]

    script = parse_script("agents:\n  a:\n    - 'plain'\n    - tool: read_file\n      args: {path: x}\n")
    cursor = Cursor(script)
    text = reply_content(cursor.next_reply("a", "")[1], cursor, "a")
    assert text.parts[0].text == "plain" and drawn == []
    call = reply_content(cursor.next_reply("a", "")[1], cursor, "a").parts[0].function_call
    assert call.name == "read_file" and call.args == {"path": "x"} and call.id == drawn[0]
    ids = {ScriptCursor.call_id("a") for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == len("sr-a-") + 10 and i.startswith("sr-a-") for i in ids)
    int(drawn[0][len("sr-a-"):], 16)  # hex, as before


async def test_a_turn_copies_no_session(harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: a call took a light copy of its new session (`create_session`) and each direct turn
    # another (`get_session`), each event appended to the copy and the stored one: 2 copies a
    # turn, now none (the call and its turns hold the stored session: sessions.py `open`, `held`).
    from google.adk.sessions import Session

    copies: list[int] = []
    model_copy = Session.model_copy

    def counted(self, *, update=None, deep=False):  # noqa: ANN001, ANN202
        copies.append(1)
        return model_copy(self, update=update, deep=deep)

    monkeypatch.setattr(Session, "model_copy", counted)
    grown = await _per_turn(harness, tmp_path, lambda: len(copies))
    assert grown == 0, f"{grown} session copies over 6 more turns (calls of one turn each)"


async def test_temp_state_lives_for_one_invocation_of_a_held_session() -> None:
    """A direct turn drives the stored session (no copy): `temp:` keys set in one invocation are
    gone by the next, as on the copy ADK's Runner drives; other state stays, as ADK keeps it."""
    from google.adk.events import Event, EventActions

    from engine.runtime.sessions import CallSessions

    sessions = CallSessions()
    made = await sessions.create_session(app_name="a", user_id="u", session_id="s")
    held = sessions.held(app_name="a", user_id="u", session_id="s")
    assert held is not made and held is sessions.held(app_name="a", user_id="u", session_id="s")
    await sessions.append_event(held, Event(author="echo", invocation_id="i",
                                            actions=EventActions(state_delta={"temp:t": 1, "k": 2})))
    assert held.state == {"temp:t": 1, "k": 2} and len(held.events) == 1  # appended once
    sessions.invocation_over(held)
    again = await sessions.get_session(app_name="a", user_id="u", session_id="s")
    assert again.state == {"k": 2} == held.state and len(again.events) == 1
