"""The suite never writes into the real user's folders: its cache (rules snapshots, the
grammar's analysis) is a folder of the session's (tests/conftest.py), in this process and in
the processes tests start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rules.snapshot import user_cache


def _session_s(folder: Path, tmp_path_factory) -> bool:
    return tmp_path_factory.getbasetemp().resolve() in folder.resolve().parents


def test_the_rules_snapshots_go_to_the_session_s_cache(tmp_path_factory) -> None:
    folder = user_cache()
    assert folder is not None and _session_s(folder, tmp_path_factory), folder


def test_a_process_a_test_starts_keeps_its_grammar_cache_there(tmp_path_factory) -> None:
    cache = Path(os.environ["XDG_CACHE_HOME"])
    subprocess.run([sys.executable, "-c", "from engine.lang.lark_backend import lark_parser; lark_parser()"],
                   env=os.environ.copy(), check=True, timeout=120)
    assert _session_s(cache, tmp_path_factory) and (cache / "escalate" / "grammar.lark-cache").is_file()
