"""The YAML rules: which activities go to a human, and what happens when nobody answers.

The loader (and PyYAML with it, ~30 ms) is imported on first use: the console's first frame
and the engine's policy types need only the model.
"""

from typing import Any

from rules.model import Action, PolicyConfig, ReasonDefault, Rule, Rules, TaskOverride

_LOADER = frozenset({"RulesError", "RulesUnreadable", "default_rules", "load_rules", "parse_rules"})

__all__ = [
    "Action",
    "PolicyConfig",
    "ReasonDefault",
    "Rule",
    "Rules",
    "RulesError",
    "RulesUnreadable",
    "TaskOverride",
    "default_rules",
    "load_rules",
    "parse_rules",
]


def __getattr__(name: str) -> Any:
    if name in _LOADER:
        from rules import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'rules' has no attribute {name!r}")
