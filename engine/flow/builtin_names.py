"""The names `tool NAME = builtin ...` may give, and the built-in each names: part of the flow
contract, apart from the tools themselves (engine/runtime/tools/) so that the compiler and
`escalate check` know them without importing the runtime."""

from __future__ import annotations

BUILTINS = {
    "streetrace.fs": "fs",
    "fs": "fs",
    "streetrace.fs_readonly": "fs_readonly",
    "fs_readonly": "fs_readonly",
    "streetrace.cli": "cli",
    "cli": "cli",
    "streetrace.web": "web",
    "web": "web",
}
