"""The rules a project's files gave, kept as JSON in its `.escalate/rules-snapshot.json`, so that
`escalate hook` (at every tool call of every agent session) neither imports PyYAML nor parses.

The snapshot holds the parsed rules (`Rules` as plain JSON: nothing in it is executed) under the
identity of the files they came from: for the rules file and for the loader's own sources
(the shipped rules, the loader, the model, the schema) their device, inode, size, mtime and
ctime in ns. A changed file changes its ctime (no program can set it back), so a snapshot is
only ever used for the very files it was made from; one made elsewhere (an archive unpacked
here, another clone) names other inodes and ctimes and is never used. It is believed only as a
regular file of this user's with no access for others (rules/checked.py) and of the exact
shape below; anything else is a miss, and replaced.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engine.kernel.model import OnTimeout, Reason
from rules.checked import read_private_json, write_private_json
from rules.matcher import Pattern
from rules.model import Action, Budget, NotifyCommand, PolicyConfig, ReasonDefault, Rule, Rules, TaskOverride

SNAPSHOT_NAME = "rules-snapshot.json"
VERSION = 1
MAX_BYTES = 8 * 1024 * 1024
_SOURCES = ("default.yaml", "loader.py", "model.py", "matcher.py", "shell.py", "schema.py", "snapshot.py")


def identity(path: Path) -> list[Any] | None:
    """What names the files behind rules read from `path` (None: it cannot be named, no snapshot)."""
    here = Path(__file__).parent
    try:
        return [VERSION, str(path), _stat(path, missing_ok=True)] + [_stat(here / name) for name in _SOURCES]
    except OSError:
        return None


def _stat(path: Path, *, missing_ok: bool = False) -> list[int] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def recall(folder: Path, ident: list[Any] | None) -> list[Rules] | None:
    """The rules kept under `ident` in `folder`, else None."""
    if ident is None:
        return None
    data = read_private_json(folder / SNAPSHOT_NAME, MAX_BYTES)
    if not isinstance(data, dict) or data.get("identity") != ident or not isinstance(data.get("rules"), list):
        return None
    try:
        return [_rules(item) for item in data["rules"]]
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


def keep(folder: Path, ident: list[Any] | None, parts: list[Rules]) -> None:
    """Keep `parts` under `ident` in `folder` (when it is this user's folder)."""
    if ident is not None:
        write_private_json(folder, SNAPSHOT_NAME, {"identity": ident, "rules": [to_plain(r) for r in parts]})


# -- Rules <-> JSON ---------------------------------------------------------------------------------


def to_plain(rules: Rules) -> dict[str, Any]:
    return {
        "global": [_plain_rule(r) for r in rules.global_rules],
        "tasks": [[name, o.always_ask, o.require_confirmation, [_plain_rule(r) for r in o.rules], o.name,
                   [list(s) for s in o.switched_at]] for name, o in rules.task_overrides.items()],
        "defaults": [[reason.value, d.on_timeout.value, d.timeout, d.option_id] for reason, d in rules.defaults.items()],
        "policy": [list(rules.policy.paths.items()), list(rules.policy.fallbacks.items()), rules.policy.max_depth,
                   rules.policy.loop_window, list(rules.policy.target_hints.items())],
        "notify": None if rules.notify is None else [list(rules.notify.command), rules.notify.timeout],
        "source": rules.source,
        "budgets": [[name, b.tokens, b.warn_at, b.source] for name, b in rules.budgets.items()],
    }


def _plain_rule(rule: Rule) -> list[Any]:
    return [rule.pattern.source, rule.action.value, rule.timeout, rule.line, rule.column, rule.why, rule.file, rule.taught]


def _rules(data: Any) -> Rules:
    """The Rules `to_plain` made; TypeError/ValueError/KeyError for anything else."""
    if not isinstance(data, dict) or set(data) != {"global", "tasks", "defaults", "policy", "notify", "source", "budgets"}:
        raise ValueError("not a snapshot of rules")
    tasks = {}
    for name, always, confirm, rules, written, switched in _list(data["tasks"]):
        tasks[_str(name)] = TaskOverride(_bool(always), _bool(confirm), tuple(_rule(r) for r in _list(rules)),
                                         _str(written), tuple((_str(s), _str(at)) for s, at in _list(switched)))
    defaults = {Reason(_str(reason)): ReasonDefault(OnTimeout(_str(on)), _num(timeout), _opt_str(option))
                for reason, on, timeout, option in _list(data["defaults"])}
    paths, fallbacks, depth, window, hints = _list(data["policy"])
    policy = PolicyConfig(_agents(paths), _agents(fallbacks), int(_num(depth)), _num(window),
                          {_str(k): _str(v) for k, v in _list(hints)})
    notify = None
    if data["notify"] is not None:
        command, timeout = _list(data["notify"])
        notify = NotifyCommand(tuple(_str(w) for w in _list(command)), _num(timeout))
    budgets = {_str(name): Budget(int(_num(tokens)), _num(warn), _str(source))
               for name, tokens, warn, source in _list(data["budgets"])}
    return Rules(tuple(_rule(r) for r in _list(data["global"])), tasks, defaults, policy, notify, _str(data["source"]),
                 budgets)


def _rule(data: Any) -> Rule:
    source, action, timeout, line, column, why, file, taught = _list(data)
    return Rule(Pattern(_str(source)), Action(_str(action)), None if timeout is None else _num(timeout),
                int(_num(line)), int(_num(column)), _str(why), _str(file), _str(taught))


def _agents(data: Any) -> dict[str, tuple[str, ...]]:
    return {_str(agent): tuple(_str(t) for t in _list(targets)) for agent, targets in _list(data)}


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("not a text")
    return value


def _opt_str(value: Any) -> str | None:
    return None if value is None else _str(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("not a boolean")
    return value


def _num(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("not a number")
    return value
