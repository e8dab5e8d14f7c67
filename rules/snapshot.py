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

Where it is kept (`slot`): the project's `.escalate/` when that is a folder of this user's; else
(a project with no `.escalate/`: most projects a `--user` hook runs in) the user's own cache
folder, `$XDG_CACHE_HOME/escalate/rules` (else `~/.cache/escalate/rules`), made 0700 and used
only while it is a folder of this user's alone (engine/private.py). There the shipped rules
alone, the same in every project, are one file (`shipped.json`, under the identity of the
loader's sources only), and a `--rules` file's snapshot is named by its path's digest.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from engine.kernel.frozen import Frozen
from engine.kernel.kinds import OnTimeout, Reason
from rules.checked import read_private_json, write_private_json
from rules.matcher import Pattern
from rules.model import Action, Budget, NotifyCommand, PolicyConfig, ReasonDefault, Rule, Rules, TaskOverride

SNAPSHOT_NAME = "rules-snapshot.json"
SHIPPED_NAME = "shipped.json"  # in the user's cache folder: the shipped rules alone
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


class Slot(Frozen):
    """Where the snapshot of one set of rules files is kept, and what it must hold to be used."""

    folder: Path
    name: str
    identity: list[Any]
    parts: int  # how many Rules those files give: 1 (the shipped or `--rules` file), 2 (with the workspace's)
    private: bool  # the folder must be this user's alone (the user's cache folder)


def slot(explicit: Path | None, top: Path) -> Slot | None:
    """Where the rules read from `explicit` (else the shipped rules and the workspace file `top`
    over them) are kept; None: nowhere (no snapshot)."""
    path = explicit if explicit is not None else top
    ident = identity(path)
    if ident is None:
        return None
    parts = 1 if explicit is not None or ident[2] is None else 2
    if _users_folder(top.parent):
        return Slot(top.parent, SNAPSHOT_NAME, ident, parts, private=False)
    cache = user_cache()
    if cache is None:
        return None
    if parts == 1 and explicit is None:  # the shipped rules alone: the same in every such project
        return Slot(cache, SHIPPED_NAME, [VERSION, None, None] + ident[3:], 1, private=True)
    import hashlib  # a `--rules` file with no .escalate/ only: loading OpenSSL costs ~2 ms

    name = hashlib.sha256(str(path).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Slot(cache, f"rules-{name}.json", ident, parts, private=True)


def user_cache() -> Path | None:
    """The user's cache folder for snapshots (not made here); None when there is no home."""
    from engine.private import user_cache_folder

    base = user_cache_folder()
    return None if base is None else base / "rules"


def _users_folder(folder: Path) -> bool:
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def _private(folder: Path) -> bool:
    from engine.private import NotPrivate, check_private

    try:
        check_private(folder)
    except NotPrivate:
        return False
    return True


def recall(where: Slot | None) -> list[Rules] | None:
    """The rules kept in `where` for its identity, else None."""
    if where is None or (where.private and not _private(where.folder)):
        return None
    data = read_private_json(where.folder / where.name, MAX_BYTES)
    if not isinstance(data, dict) or data.get("identity") != where.identity or not isinstance(data.get("rules"), list):
        return None
    try:
        parts = [_rules(item) for item in data["rules"]]
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    return parts if len(parts) == where.parts else None


def keep(where: Slot | None, parts: list[Rules]) -> None:
    """Keep `parts` in `where`. Not when they are not what its identity names: a workspace file
    made (or removed) between taking the identity and reading the files."""
    if where is None or len(parts) != where.parts:
        return
    if where.private:
        from engine.private import NotPrivate, make_folders, private_folder

        try:
            make_folders(where.folder.parent)
            private_folder(where.folder)
        except (OSError, NotPrivate):
            return
    write_private_json(where.folder, where.name, {"identity": where.identity, "rules": [to_plain(r) for r in parts]})


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
