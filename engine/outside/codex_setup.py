"""What Codex needs before it runs the hooks `escalate hook install codex` wrote, told after
what changed (checked with the real Codex CLI 0.171.0: docs/outside.md "Codex").

- No feature flag: the `hooks` feature is stable and on (`codex features list`); `[features]
  hooks = false` (or the old name `codex_hooks`) in its config.toml turns every hook off.
- A project's `.codex/hooks.json` is read only in a trusted project: `[projects."ROOT"]
  trust_level = "trusted"` in config.toml, ROOT being the project's git repository root when it
  is in one (what `codex exec --trust`, or trusting the folder when `codex` asks, writes).
- A new or changed hook runs only once a person has reviewed it in Codex's TUI ("Hooks need
  review", "Trust all and continue", or `/hooks`), which keeps its hash in config.toml;
  `codex exec` cannot review one (`--dangerously-bypass-hook-trust` skips the review for a run).

config.toml is only read here, never written: trusting is the person's act.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

MAX_CONFIG_BYTES = 4 * 1024 * 1024


def codex_home() -> Path:
    """Codex's own folder: `$CODEX_HOME`, else `~/.codex`."""
    given = os.environ.get("CODEX_HOME")
    return Path(given) if given else Path.home() / ".codex"


def steps(project: Path | None, changed: bool) -> list[str]:
    """What the person does (or has done) so that Codex runs escalate's hooks, one line each;
    `project` None: the user's hooks (`--user`), which need no project trust."""
    config = codex_home() / "config.toml"
    data, problem = _read(config)
    lines = [f"{config}: {problem}: the steps below were not checked against it"] if problem else []
    features = data.get("features") if isinstance(data.get("features"), dict) else {}
    off = [name for name in ("hooks", "codex_hooks") if features.get(name) is False]
    if off:
        lines.append(f"turn hooks on: {config} has [features] {off[0]} = false, which turns every Codex hook off: "
                     "remove that line")
    else:
        lines.append("hooks need no feature flag (Codex 0.171: the hooks feature is on unless config.toml turns it off)")
    if project is not None:
        root = _git_root(project) or project
        level = _trust_level(data, root)
        key = f"[projects.{json.dumps(str(root))}]"
        if level == "trusted":
            lines.append(f"the project is trusted ({config} {key}): Codex reads {project / '.codex' / 'hooks.json'}")
        else:
            said = f"{config} marks it {level!r}" if level else "Codex does not trust it yet"
            lines.append(f"trust the project: Codex reads {project / '.codex' / 'hooks.json'} only in a trusted project "
                         f"({said}): trust the folder when `codex` asks, or run `codex exec --trust` in it once, "
                         f"or put in {config}: {key} trust_level = \"trusted\"")
    where = f" in {project}" if project is not None else ""
    if changed:
        lines.append(f"review the hooks: Codex runs a new or changed hook only once you have trusted it: start `codex`"
                     f"{where} and choose \"Trust all and continue\" at \"Hooks need review\" (or use /hooks); "
                     "until then they do not run, and `codex exec` cannot trust them")
    else:
        lines.append(f"hooks you have already trusted in Codex stay trusted (start `codex`{where} to review any it "
                     "says need review)")
    return lines


def _read(config: Path) -> tuple[dict[str, Any], str]:
    """config.toml's content, or {} and why it could not be read ('' when it is simply absent)."""
    import tomllib

    try:
        if config.stat().st_size > MAX_CONFIG_BYTES:
            return {}, f"larger than {MAX_CONFIG_BYTES // (1024 * 1024)} MB"
        return tomllib.loads(config.read_text(encoding="utf-8")), ""
    except FileNotFoundError:
        return {}, ""
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot read it: {exc}"
    except tomllib.TOMLDecodeError as exc:
        return {}, f"not TOML ({str(exc).splitlines()[0][:200]})"


def _trust_level(data: dict[str, Any], root: Path) -> str:
    projects = data.get("projects")
    entry = projects.get(str(root)) if isinstance(projects, dict) else None
    level = entry.get("trust_level") if isinstance(entry, dict) else None
    return level if isinstance(level, str) else ""


def _git_root(folder: Path) -> Path | None:
    """The git repository `folder` is in (a `.git` folder or file), where Codex keys its trust."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
