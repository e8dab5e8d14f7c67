"""The YAML rules: which activities go to a human, and what happens when nobody answers."""

from rules.loader import RulesError, RulesUnreadable, default_rules, load_rules, parse_rules
from rules.model import Action, PolicyConfig, ReasonDefault, Rule, Rules, TaskOverride

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
