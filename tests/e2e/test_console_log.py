"""The console's log file goes to this user's own folder (never beside a `--store` file, where it
may not be writable, nor under a shared name in the temporary folder), in a real pseudo-terminal."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.e2e.pty_console import PtyConsole

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return folder


def open_then_quit(cwd: Path, *args: str) -> tuple[int, bytes]:
    console = PtyConsole(cwd, *args)
    try:
        console.wait_for(b"auth-refactor")  # the demo's workflows are listed: the app is up
        console.type("q")  # nothing runs: no question asked
        return console.exit_code(), bytes(console.output)
    finally:
        console.close()


def test_a_store_whose_folder_takes_no_file_opens_and_logs_in_the_users_folder(tmp_path: Path, tmp: Path) -> None:
    code, out = open_then_quit(tmp_path, "--store", "/proc/version")
    assert b"Traceback" not in out
    assert code in (0, 2), out[-2000:]  # 2: /proc/version is no history file, said in one line
    log = tmp / f"escalate-{os.geteuid()}" / "escalate-console.log"
    assert log.is_file() and log.parent.stat().st_mode & 0o777 == 0o700


def test_a_users_folder_open_to_others_is_not_used_and_that_is_said(tmp_path: Path, tmp: Path) -> None:
    planted = tmp / f"escalate-{os.geteuid()}"
    planted.mkdir()
    os.chmod(planted, 0o777)  # as if another user had made it: group and others may write in it
    code, out = open_then_quit(tmp_path)
    assert code == 0 and b"Traceback" not in out
    assert b"escalate: warning: the console keeps no log: " in out and b"open to other users (mode 0777)" in out
    assert list(planted.iterdir()) == [] and not (tmp / "escalate-console.log").exists()
