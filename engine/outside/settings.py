"""Registering escalate's hooks in an agent's JSON settings (Claude Code's `.claude/settings.json`,
Codex's `.codex/hooks.json`): both nest them as `{"hooks": {EVENT: [{"matcher": ..., "hooks":
[{"type": "command", "command": ..., "timeout": SECONDS}]}]}}`.

Everything else in the file stays as it was, in its order; escalate's own entries are found by
their command (`... hook claude`), changed in place, or removed with the groups and events they
leave empty. Installing twice changes nothing the second time. The file is replaced atomically.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.files import replace_text

MAX_SETTINGS_BYTES = 4 * 1024 * 1024


class SettingsError(Exception):
    """The settings file cannot be read or changed (one line naming it)."""


@dataclass(frozen=True)
class HookEntry:
    event: str
    matcher: str | None  # None: the event takes no matcher
    command: str
    timeout: int  # seconds


def is_ours(command: object, kind: str) -> bool:
    """An escalate hook command for agent `kind` (`escalate hook claude`, `python [-P] -m engine
    hook claude ...`)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i in range(len(words) - 1):
        if words[i] == "hook" and words[i + 1] == kind and i > 0:
            before = words[:i]
            if Path(before[-1]).name == "escalate" or before[-2:] == ["-m", "engine"]:
                return True
    return False


def install(path: Path, entries: list[HookEntry], kind: str) -> list[str]:
    """Register `entries`; returns what changed, one line each (empty: nothing to change)."""
    data = _read(path)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"{path}: \"hooks\" is not a JSON object: not changed")
    changes = []
    for entry in entries:
        groups = hooks.setdefault(entry.event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"{path}: \"hooks\".{entry.event} is not a list: not changed")
        mine = {"type": "command", "command": entry.command, "timeout": entry.timeout}
        found = _find(groups, kind)
        if found is None:
            group: dict[str, Any] = {"matcher": entry.matcher} if entry.matcher is not None else {}
            group["hooks"] = [mine]
            groups.append(group)
            changes.append(f"added {entry.event} hook: {entry.command} (timeout {entry.timeout} s)")
        elif found != mine:
            found.clear()
            found.update(mine)
            changes.append(f"updated {entry.event} hook: {entry.command} (timeout {entry.timeout} s)")
    if changes:
        _write(path, data)
    return changes


def uninstall(path: Path, kind: str) -> list[str]:
    """Remove escalate's hooks for `kind` (and the groups and events they leave empty)."""
    if not path.exists():
        return []
    data = _read(path)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return []
    changes = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        for group in list(groups):
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                continue
            kept = [h for h in inner if not (isinstance(h, dict) and is_ours(h.get("command"), kind))]
            if len(kept) == len(inner):
                continue
            changes += [f"removed {event} hook: {h['command']}" for h in inner if h not in kept]
            if kept:
                group["hooks"] = kept
            else:
                groups.remove(group)
        if not groups:
            del hooks[event]
    if not hooks:
        del data["hooks"]
    if changes:
        _write(path, data)
    return changes


def _find(groups: list[Any], kind: str) -> dict[str, Any] | None:
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        for hook in inner if isinstance(inner, list) else []:
            if isinstance(hook, dict) and is_ours(hook.get("command"), kind):
                return hook
    return None


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        if path.stat().st_size > MAX_SETTINGS_BYTES:
            raise SettingsError(f"{path}: larger than {MAX_SETTINGS_BYTES // (1024 * 1024)} MB: not changed")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: cannot read it: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        line, column = getattr(exc, "lineno", 0), getattr(exc, "colno", 0)
        raise SettingsError(f"{path}:{line}:{column}: not JSON ({getattr(exc, 'msg', exc)}): not changed") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: not a JSON object: not changed")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        replace_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise SettingsError(f"{path}: cannot write it: {exc}") from None
