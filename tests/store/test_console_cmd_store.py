"""`escalate console --store PATH` refuses an unusable or broken store before any screen opens:
one line, exit 2, the file as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli.main import main
from tests.store.store_helpers import agent_line
from tui.session import EAGER_CHECK_BYTES


def run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


@pytest.fixture
def headless(monkeypatch):
    """`app.run()` without a terminal (a big store is read after the console's first frame)."""
    from textual.app import App

    from tui.app import EscalateApp

    monkeypatch.setattr(EscalateApp, "run", lambda self: App.run(self, headless=True))


@pytest.mark.parametrize("size", ["small", "big"])  # big: imported after the first frame, then the console closes
def test_a_bad_line_stops_the_console(tmp_path: Path, capsys, headless, size: str) -> None:
    store = tmp_path / "history.jsonl"
    good = agent_line("codebase_locator", "codebase_analyzer")
    before = good * (1 if size == "small" else EAGER_CHECK_BYTES // len(good) + 100)
    store.write_text(before + '{"v":1,"kind":"agent_escalation","at":"2025-11-22T04:00:00Z","source":null}\n' + good)
    content = store.read_bytes()
    code, err = run(["console", "--store", str(store)], capsys)
    assert code == 2
    line = before.count("\n") + 1
    assert err.splitlines() == [f"{store}:{line}:62: error: field 'source' must be text"]
    assert store.read_bytes() == content


def test_an_unusable_store_path_stops_the_console(tmp_path: Path, capsys) -> None:
    (tmp_path / "file").write_text("not a folder")
    store = tmp_path / "file" / "history.jsonl"
    code, err = run(["console", "--store", str(store)], capsys)
    assert code == 2
    assert err.startswith(f"{store}: error: cannot open the store: ")
    assert len(err.strip().splitlines()) == 1


def test_a_store_that_is_a_folder_stops_the_console(tmp_path: Path, capsys) -> None:
    code, err = run(["console", "--store", str(tmp_path)], capsys)
    assert code == 2
    assert err.strip() == f"{tmp_path}: error: cannot open the store: Is a directory"
