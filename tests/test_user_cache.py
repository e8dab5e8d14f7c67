"""The user's cache folder (engine/private.py user_cache_folder), shared by the rules' snapshots
(rules/snapshot.py) and the grammar's cache (engine/lang/lark_backend.py): `$XDG_CACHE_HOME` when
absolute, else `~/.cache`; a relative `$XDG_CACHE_HOME` (which the XDG spec says to ignore) never
puts a cache under the current folder. Each case runs in a fresh interpreter (the parser is built
once per process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GRAMMAR = "from engine.lang.lark_backend import lark_parser; lark_parser()"
SNAPSHOT = "from rules.snapshot import user_cache; print(user_cache())"


def _run(code: str, tmp_path: Path, cache: str | None) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"} | {"HOME": str(tmp_path / "home")}
    if cache is not None:
        env["XDG_CACHE_HOME"] = cache
    done = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("code", [GRAMMAR, SNAPSHOT])
def test_an_absolute_xdg_cache_home_is_used(tmp_path: Path, code: str) -> None:
    done = _run(code, tmp_path, str(tmp_path / "xdg"))
    if code == GRAMMAR:
        assert (tmp_path / "xdg" / "escalate" / "grammar.lark-cache").is_file()
    else:
        assert done.stdout.strip() == str(tmp_path / "xdg" / "escalate" / "rules")


@pytest.mark.parametrize("code", [GRAMMAR, SNAPSHOT])
def test_a_relative_xdg_cache_home_is_ignored_never_a_folder_under_the_current_one(tmp_path: Path, code: str) -> None:
    done = _run(code, tmp_path, "relative")
    assert not (tmp_path / "work" / "relative").exists()
    home_cache = tmp_path / "home" / ".cache" / "escalate"
    if code == GRAMMAR:
        assert (home_cache / "grammar.lark-cache").is_file()
    else:
        assert done.stdout.strip() == str(home_cache / "rules")
