"""A tool call's arguments checked against the tool's declared schema, before anything else sees
them (the rules, a person, the tool).

The schema is the one the model is told: ADK declares a function tool from its signature (type
hints, defaults), and `args_model` builds the validator from that same signature. The check is
strict: a value of another type is refused, never converted (a list is not a string: `str(list)`
would put text in front of the shell that no rule read); a missing required argument and an
unknown one are refused too. What passes is what the tool runs with, and what the rules match.
"""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, Callable

CONTEXT_PARAMS = ("tool_context", "input_stream")  # filled in by ADK, never by the model
MAX_PROBLEMS = 3  # a refusal names at most this many arguments (it stays one short line)


class ArgumentsRefused(ValueError):
    """The arguments do not fit the tool's schema: `TOOL: problems`, one line for the model."""

    def __init__(self, tool: str, problems: str) -> None:
        super().__init__(f"{tool}: {problems}")
        self.tool = tool
        self.problems = problems


def _agent_request(request: str) -> None:
    """An agent used as a tool (ADK's AgentTool without an input schema) takes one string."""


@functools.lru_cache(maxsize=256)
def args_model(fn: Callable[..., Any]) -> Any:
    """The pydantic model of a tool function's arguments, from its signature (cached: closures of
    one `def` are new objects per run, bound methods per access; the cache is bounded)."""
    import pydantic

    hints = typing.get_type_hints(fn)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if name in CONTEXT_PARAMS or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        default = ... if param.default is param.empty else param.default
        fields[name] = (hints.get(name, Any), default)
    config = pydantic.ConfigDict(extra="forbid", strict=True)
    return pydantic.create_model(f"{fn.__name__}_args", __config__=config, **fields)


def check_args(tool: str, fn: Callable[..., Any], args: Any) -> dict[str, Any]:
    """`args` as the function `fn` (the tool `tool`) takes them; raises ArgumentsRefused."""
    import pydantic

    model = args_model(fn)
    if not isinstance(args, dict):
        raise ArgumentsRefused(tool, f"the arguments must be an object, not {_json_type(args)}")
    try:
        return dict(model.model_validate(args).model_dump(exclude_unset=True))
    except pydantic.ValidationError as exc:
        problems = [_problem(error, model) for error in exc.errors(include_url=False)]
        more = f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
        raise ArgumentsRefused(tool, f"{'; '.join(problems[:MAX_PROBLEMS])}{more}") from None
    except RecursionError:  # a value nested deeper than the validator goes
        raise ArgumentsRefused(tool, "the arguments are nested too deeply") from None


def check_tool_args(tool: Any, args: Any) -> dict[str, Any] | None:
    """The checked arguments of an ADK tool object, or None for a tool without a signature of its
    own to check against (an MCP server's tool: the server checks its own schema)."""
    from google.adk.tools import FunctionTool
    from google.adk.tools.agent_tool import AgentTool

    if isinstance(tool, FunctionTool) and tool.func is not None:
        return check_args(tool.name, tool.func, args)
    if isinstance(tool, AgentTool) and getattr(tool.agent, "input_schema", None) is None:
        return check_args(tool.name, _agent_request, args)
    return None


_TYPE_WORDS = {
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "none_required": "must be null",
}


def _problem(error: Any, model: Any) -> str:
    where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
    kind = error.get("type", "")
    if kind == "missing":
        return f"argument {where!r} is missing"
    if kind == "extra_forbidden":
        known = ", ".join(model.model_fields) or "none"
        return f"{where!r} is not one of its arguments ({known})"
    words = _TYPE_WORDS.get(kind, str(error.get("msg", "is not valid")).lower())
    return f"argument {where!r} {words}, not {_json_type(error.get('input'))}"


def _json_type(value: Any) -> str:
    """The JSON name of a value's type (what the model sent), never the value itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
