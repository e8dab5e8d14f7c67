"""What escalate writes to disk is this user's alone: `.escalate/` 0700, the database and its
-wal/-shm files 0600 (the demo's too), whatever the umask; another OS user (a real second uid,
through `setpriv`) cannot read a secret a run recorded. An existing database keeps its mode."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from argparse import Namespace
from pathlib import Path

import pytest

from engine.durable.database import Database
from tests.unprivileged import as_other_user

ROOT = Path(__file__).resolve().parents[2]
ASK = ROOT / "tests" / "workers" / "data" / "ask.sr"
SECRET = "SECRET-6f1e2a"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def record_a_run(db: Database) -> None:
    db.create_run(run_id="r1", task="t", workflow="w", path="p", input=SECRET, workspace="/", status="running",
                  started=1.0)


def test_a_new_database_and_its_journal_files_are_the_users_alone_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        path = tmp_path / "new" / ".escalate" / "escalate.db"
        db = Database(f"sqlite:///{path}")
        try:
            record_a_run(db)
            files = {p.name: mode(p) for p in path.parent.iterdir()}
        finally:
            db.close()
    finally:
        os.umask(old)
    assert files == {"escalate.db": 0o600, "escalate.db-wal": 0o600, "escalate.db-shm": 0o600}
    assert mode(path.parent) == mode(path.parent.parent) == 0o700  # every folder it made


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    """A database shared on purpose (chmod g+rw) stays shared."""
    path = tmp_path / "team.db"
    Database(f"sqlite:///{path}").close()
    os.chmod(path, 0o660)
    Database(f"sqlite:///{path}").close()
    assert mode(path) == 0o660


def test_the_demos_database_folder_is_made_0700(tmp_path: Path, monkeypatch) -> None:
    from engine.cli.console_cmd import _database

    monkeypatch.delenv("ESCALATE_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    old = os.umask(0o022)
    try:
        url = _database(Namespace(db=None, files=[]))
        Database(url).close()
    finally:
        os.umask(old)
    path = Path(url[len("sqlite:///"):])
    assert path.parent.parent == tmp_path / "data" and path.name == "demo.db"
    assert mode(path) == 0o600 and mode(path.parent) == mode(path.parent.parent) == 0o700


READ_ALL = r"""
import sys
from pathlib import Path
for path in sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_file()):
    try:
        print(path.name, "SECRET-6f1e2a" in path.read_bytes().decode("latin-1"))
    except OSError as exc:
        print(path.name, type(exc).__name__)
"""


@pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="a second OS user needs root (setpriv)")
def test_another_user_cannot_read_what_a_run_recorded(monkeypatch) -> None:
    """A real `escalate run` with the default database, under umask 022; the secret is the run's
    input, recorded in its row. Another user then tries every file in `.escalate/`."""
    base = Path(tempfile.mkdtemp(prefix="modes-"))
    try:
        os.chmod(base, 0o755)
        monkeypatch.delenv("ESCALATE_DB")
        done = subprocess.run([sys.executable, "-m", "engine", "run", str(ASK), "--script", str(ASK.with_suffix(".yaml")),
                               "--input", SECRET], cwd=base, capture_output=True, text=True, timeout=180, umask=0o022)
        assert done.returncode == 4, done.stderr  # waiting on a human: the run's files stay as they are
        folder = base / ".escalate"
        made = mode(folder)
        os.chmod(folder, 0o755)  # even with the folder opened up, the files stay closed
        seen = subprocess.run([*as_other_user(), sys.executable, "-c", READ_ALL, str(folder)], capture_output=True,
                              text=True, timeout=60)
        assert seen.returncode == 0, seen.stderr
        assert seen.stdout.splitlines() == ["escalate.db PermissionError"], seen.stdout
        assert made == 0o700
        assert {p.name: mode(p) for p in folder.iterdir() if p.is_file()} == {"escalate.db": 0o600}
    finally:
        shutil.rmtree(base, ignore_errors=True)
