"""rules/snapshot.py: the project's rules kept as JSON give exactly what reading the files gives,
and only for the very files they were made from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rules import snapshot
from rules.layering import remembered
from rules.loader import load_layered

RICH = """escalationRules:
  global:
    - {pattern: "rm -rf", action: deny}
    - {pattern: "re:^git push( .*)?--force", action: stop}
    - {pattern: "touch", action: ask_user, timeout: 600}
    - {pattern: "ls -la", action: allow, taught: "2026-11-26 from esc-1"}
  taskOverrides:
    deploy-production:
      alwaysAsk: true
      rules:
        - {pattern: "kubectl", action: ask_user, timeout: 30.5}
    api_rewrite: {requireConfirmation: true}
  defaults:
    security_concern: {timeout: 120, onTimeout: stop}
    architecture_decision: {onTimeout: "option:keep"}
  budgets:
    default: {tokens: 1000, warnAt: 0.5}
    deploy-production: {tokens: 50}
policy:
  paths: {planner: [coder, reviewer]}
  fallbacks: {coder: [planner]}
  maxDepth: 4
  loopWindow: 60
  targetHints: {security: reviewer, cost: planner}
notify: {command: [notify-send, escalate], timeout: 5}
"""


def test_the_snapshot_gives_what_the_files_give(tmp_path: Path) -> None:
    (tmp_path / ".escalate").mkdir()
    (tmp_path / ".escalate" / "rules.yaml").write_text(RICH)
    assert remembered(None, tmp_path) is None
    read = load_layered(None, workspace=tmp_path)
    kept = remembered(None, tmp_path)
    assert kept is not None
    assert snapshot.to_plain(kept) == snapshot.to_plain(read)
    assert len(read.global_rules) > 4 and read.task_overrides and read.budgets and read.policy.paths
    for task, tool, args in [("x", "Bash", {"command": "rm -rf /"}), ("deploy-production", "Bash", {"command": "kubectl get"}),
                             ("x", "Bash", {"command": "git push --force"}), ("x", "Bash", {"command": "ls -la"}),
                             ("api-rewrite", "Read", {"path": "a"})]:
        assert kept.match_tool(task, tool, args) == read.match_tool(task, tool, args) or \
            kept.match_tool(task, tool, args).describe() == read.match_tool(task, tool, args).describe()


def test_an_explicit_rules_file_is_kept_too(tmp_path: Path) -> None:
    given = tmp_path / "r.yaml"
    given.write_text(RICH)
    (tmp_path / ".escalate").mkdir()
    read = load_layered(str(given), workspace=tmp_path)
    kept = remembered(str(given), tmp_path)
    assert kept is not None and snapshot.to_plain(kept) == snapshot.to_plain(read)
    assert remembered(None, tmp_path) is None  # another file: not this snapshot


@pytest.mark.parametrize("change", ["same size, mtime put back", "removed"])
def test_a_changed_file_is_read_again(tmp_path: Path, change: str) -> None:
    (tmp_path / ".escalate").mkdir()
    path = tmp_path / ".escalate" / "rules.yaml"
    path.write_text(RICH)
    load_layered(None, workspace=tmp_path)
    assert remembered(None, tmp_path) is not None
    before = os.stat(path)
    if change == "removed":
        path.unlink()
    else:
        path.write_text(RICH.replace("rm -rf", "rm -rF"))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert remembered(None, tmp_path) is None
    assert ("rm -rF" in str(snapshot.to_plain(load_layered(None, workspace=tmp_path)))) is (change != "removed")


def test_a_workspace_notify_still_needs_trust_when_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / ".escalate").mkdir()
    (tmp_path / ".escalate" / "rules.yaml").write_text(RICH)
    assert load_layered(None, workspace=tmp_path).notify is None  # not trusted: not run
    kept = remembered(None, tmp_path)
    assert kept is not None and kept.notify is None


def test_a_workspace_file_made_while_the_rules_are_read_is_never_kept_as_absent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The identity is taken before the files are read: a workspace file made in between is
    read, but the snapshot would name it absent, and be used once it is removed again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / ".escalate").mkdir()
    top = tmp_path / ".escalate" / "rules.yaml"
    taken = snapshot.identity

    def identity_then_made(path: Path) -> object:
        ident = taken(path)
        if not top.exists():
            top.write_text(RICH)
        return ident

    monkeypatch.setattr(snapshot, "identity", identity_then_made)
    assert "rm -rf" in str(snapshot.to_plain(load_layered(None, workspace=tmp_path)))
    monkeypatch.setattr(snapshot, "identity", taken)
    top.unlink()
    kept = remembered(None, tmp_path)
    assert kept is None or "rm -rf" not in str(snapshot.to_plain(kept))
