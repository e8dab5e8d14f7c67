"""ToolSpec -> ADK tools: the builtins of the contract, and MCP servers through ADK's toolset."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable

from engine.flow.spec import ToolSpec
from engine.runtime.tools.arguments import check_args
from engine.flow.builtin_names import BUILTINS
from engine.runtime.tools.cli import cli_functions
from engine.runtime.tools.fs import fs_functions
from engine.runtime.tools.web import web_functions
from engine.runtime.tools.workspace import Workspace


class ToolUnavailable(Exception):
    """A declared tool that cannot be built (unknown builtin, MCP support missing)."""




def builtin_functions(target: str, workspace: Workspace) -> list[Any]:
    kind = BUILTINS.get(target)
    if kind == "fs":
        return fs_functions(workspace, readonly=False)
    if kind == "fs_readonly":
        return fs_functions(workspace, readonly=True)
    if kind == "cli":
        return cli_functions(workspace)
    if kind == "web":
        return web_functions()
    raise ToolUnavailable(f"unknown builtin tool {target!r} (known: {', '.join(sorted(set(BUILTINS)))})")


@functools.lru_cache(maxsize=1)
def _builtin_signatures() -> dict[str, Callable[..., Any]]:
    """Every built-in tool function by name. The functions are only inspected here, never
    called, so the workspace they are bound to does not matter."""
    unused = Workspace(Path("/"))
    kinds = sorted(set(BUILTINS.values()))
    return {fn.__name__: fn for kind in kinds for fn in builtin_functions(kind, unused)}


def check_builtin_args(tool: str, args: Any) -> dict[str, Any] | None:
    """A built-in tool's arguments checked against its schema (as a run checks them) where no
    run built the tools (an edit in the console, `escalate answer --args`): the checked
    arguments, None for a tool that is not built in; raises ArgumentsRefused."""
    fn = _builtin_signatures().get(tool)
    return None if fn is None else check_args(tool, fn, args)


def build_tools(spec: ToolSpec, workspace: Workspace) -> list[Any]:
    """ADK tools (FunctionTool or an MCP toolset) for one `tool NAME = ...` declaration."""
    if spec.kind == "builtin":
        from engine.runtime.tools.declared import DeclaredFunctionTool

        return [DeclaredFunctionTool(fn) for fn in builtin_functions(spec.target, workspace)]
    if spec.kind == "mcp":
        try:
            from google.adk.tools.mcp_tool.mcp_session_manager import StreamableHTTPConnectionParams
            from google.adk.tools.mcp_tool.mcp_toolset import McpToolset
        except ImportError:
            raise ToolUnavailable(f"tool {spec.name!r}: MCP support needs the 'mcp' package (pip install mcp)") from None
        headers = dict(spec.headers)
        if spec.auth is not None:
            scheme, value = spec.auth
            headers["Authorization"] = f"{scheme.capitalize()} {value}"
        return [McpToolset(connection_params=StreamableHTTPConnectionParams(url=spec.target, headers=headers))]
    raise ToolUnavailable(f"tool {spec.name!r}: unsupported kind {spec.kind!r}")
