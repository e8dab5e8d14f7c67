"""The names `tool NAME = builtin ...` may give, and the built-in each names. Apart from the
tools themselves so that `escalate check` knows them without importing the tools."""

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
