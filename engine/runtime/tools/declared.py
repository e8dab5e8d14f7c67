"""ADK function tools that build their declaration once.

ADK asks every tool of an agent for its declaration at every model turn (`LlmRequest.append_tools`
calls the tool's `_get_declaration`, the hook ADK documents for a tool's declaration), and a
`FunctionTool` answers with a deep copy of its cached declaration: ~540 Python calls a turn for
the `ask_human` tool alone, ~10% of a scripted turn (docs/durable.md "What a turn costs", the
fifth pass). Here the declaration is built once a tool and each turn gets a shallow copy: what
ADK changes in a request's declaration (its name, description, behavior) are its top-level
fields, which the copy keeps apart; the nested parameter schema is shared, and nothing in ADK
or escalate changes it. The environment ADK reads for a declaration (the API variant, its
feature flags) is read at the tool's first turn.
"""

from __future__ import annotations

from typing import Any

from google.adk.tools import FunctionTool, LongRunningFunctionTool


class _DeclaredOnce:
    _declared: Any = None  # the declaration ADK built for this tool, once

    def _get_declaration(self) -> Any:
        if self._declared is None:
            self._declared = super()._get_declaration()  # type: ignore[misc]
        return None if self._declared is None else self._declared.model_copy()


class DeclaredFunctionTool(_DeclaredOnce, FunctionTool):
    """A `FunctionTool` whose declaration is built once."""


class DeclaredLongRunningTool(_DeclaredOnce, LongRunningFunctionTool):
    """A `LongRunningFunctionTool` (ADK pauses the run on its call) whose declaration is built once."""
