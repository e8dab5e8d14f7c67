"""Arguments of every type, for every tool an agent gets (the built-ins, `ask_human`,
`escalate_to_agent`, an agent used as a tool): whatever the model sends, the check either refuses
it in one line or passes values of the declared types; a file tool given what passed runs
without raising. Never a traceback, never a wrong type reaching a tool (issue 22, finding 3)."""

from __future__ import annotations

import asyncio
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.runtime import callbacks
from engine.flow.spec import ToolSpec
from engine.runtime.tools.arguments import CONTEXT_PARAMS, ArgumentsRefused, check_tool_args
from engine.runtime.tools.registry import BUILTINS, build_tools, check_builtin_args
from engine.runtime.tools.workspace import Workspace

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def every_tool(root: Path) -> list[Any]:
    from google.adk.agents import LlmAgent
    from google.adk.tools import LongRunningFunctionTool
    from google.adk.tools.agent_tool import AgentTool

    workspace = Workspace(root)
    tools = [t for kind in sorted(set(BUILTINS.values())) for t in build_tools(ToolSpec(kind, "builtin", kind), workspace)]
    tools.append(LongRunningFunctionTool(callbacks.ask_human))
    tools.append(LongRunningFunctionTool(callbacks.escalate_to_agent_tool(None, "a")))  # type: ignore[arg-type]
    tools.append(AgentTool(LlmAgent(name="child", model="unused")))
    return tools


def declared(tool: Any) -> dict[str, inspect.Parameter]:
    func = getattr(tool, "func", None)
    if func is None:  # the agent tool: one string, `request`
        return {"request": inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=str)}
    return {n: p for n, p in inspect.signature(func).parameters.items() if n not in CONTEXT_PARAMS}


def fits(value: Any, hint: Any) -> bool:
    """Whether `value` is of the annotated type (the shapes the tools declare)."""
    origin, parts = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, getattr(__import__("types"), "UnionType")):
        return any(fits(value, part) for part in parts)
    if hint is type(None):
        return value is None
    if origin is list:
        return isinstance(value, list) and all(fits(v, parts[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) and fits(v, parts[1]) for k, v in value.items())
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint) and not (hint is int and isinstance(value, bool))


@st.composite
def calls(draw: st.DrawFn, tool: Any) -> dict[str, Any]:
    names = list(declared(tool))
    keys = draw(st.lists(st.sampled_from(names) | st.text(max_size=6), max_size=len(names) + 1, unique=True))
    return {k: draw(st.text(max_size=40) if draw(st.booleans()) else JSON) for k in keys}


@pytest.fixture(scope="module")
def tools(tmp_path_factory) -> tuple[Path, list[Any]]:
    root = tmp_path_factory.mktemp("ws")
    return root, every_tool(root)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_tool_refuses_in_one_line_or_passes_declared_types(tools, data) -> None:
    root, all_tools = tools
    tool = data.draw(st.sampled_from(all_tools))
    args = data.draw(calls(tool))
    params = declared(tool)
    try:
        checked = check_tool_args(tool, args)
    except ArgumentsRefused as exc:
        text = str(exc)
        assert text.startswith(f"{tool.name}: ") and "\n" not in text and len(text) < 600
        return
    assert checked is not None
    assert set(checked) <= set(params)
    assert all(name in checked for name, p in params.items() if p.default is inspect.Parameter.empty)
    hints = typing.get_type_hints(tool.func) if getattr(tool, "func", None) else {"request": str}
    assert all(fits(value, hints.get(name, Any)) for name, value in checked.items()), checked
    if check_builtin_args(tool.name, args) is not None:  # a built-in: an edit is checked the same way
        assert check_builtin_args(tool.name, args) == checked
    if tool.name in ("read_file", "write_file", "delete_file", "list_directory"):
        result = asyncio.run(tool.func(**checked))  # a file tool given what passed: a result, never an exception
        assert isinstance(result, dict)


@settings(max_examples=100, deadline=None)
@given(value=JSON.filter(lambda v: not isinstance(v, str)))
def test_run_command_never_gets_a_command_that_is_not_a_string(value: Any) -> None:
    with pytest.raises(ArgumentsRefused, match="^run_command: argument 'command' must be a string, not "):
        check_builtin_args("run_command", {"command": value})
