"""The SQLite news folder with real Unix sockets: made 0700, used only when it is this user's
alone (checked each time it is opened, to listen or to send), and a socket path that `bind`
takes at every database path length (counted in bytes, with the real socket name).

Another OS user's folders: tests/workers/test_news_other_user.py."""

from __future__ import annotations

import logging
import os
import socket
import stat
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from engine.durable.signals import SocketSignals, news_folder

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets")

# The longest socket path bind takes: sockaddr_un's 108 bytes on Linux (104 elsewhere), less the NUL.
LIMIT = 107 if sys.platform.startswith("linux") else 103


class Heard:
    def __init__(self) -> None:
        self.messages: list[str] = []
        self.arrived = threading.Event()

    def __call__(self, message: str) -> None:
        self.messages.append(message)
        self.arrived.set()


def news_travels(db_path: Path) -> bool:
    """A listener and a sender on `db_path`, as two processes have them: did the news arrive?"""
    listener, sender = SocketSignals(db_path), SocketSignals(db_path)
    heard = Heard()
    try:
        listener.listen(heard)
        sender.committed("raised r1.1")
        return heard.arrived.wait(10) and heard.messages == ["raised r1.1"]
    finally:
        listener.close()
        sender.close()


def listen_and_send(db_path: Path) -> None:
    """What a listening process and a writing one do on `db_path`, without waiting for news: a
    datagram is sent before `committed` returns, so a socket that got one already holds it."""
    listener, sender = SocketSignals(db_path), SocketSignals(db_path)
    try:
        listener.listen(Heard())
        sender.committed("raised r1.1")
    finally:
        listener.close()
        sender.close()


@pytest.fixture
def short_base() -> Path:
    """A folder with a short path (tmp_path's is already ~60 bytes), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="n", dir="/tmp" if os.path.isdir("/tmp") else None))
    yield base
    import shutil

    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def own_tmp(short_base: Path, monkeypatch) -> Path:
    """The temporary folder (where this user's own folder goes) inside `short_base`."""
    folder = short_base / "t"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return folder


def db_path_of_length(base: Path, total: int, letter: str) -> Path:
    """A database path of `total` bytes under `base` (`letter` may take two bytes in UTF-8)."""
    rest = total - len(os.fsencode(base)) - len("/x.db") - 1
    name = letter * (rest // len(letter.encode()))
    name += "a" * (rest - len(name.encode()))
    path = base / name / "x.db"
    assert len(os.fsencode(path)) == total
    path.parent.mkdir(exist_ok=True)
    return path


@pytest.mark.parametrize("letter", ["a", "é"])
def test_news_travels_at_every_database_path_length_around_the_socket_limit(own_tmp: Path, letter: str) -> None:
    """`<db>.news/<socket>` crosses the limit inside this range: every length below it keeps the
    folder beside the database, every one above moves to this user's folder; each one binds."""
    probe = SocketSignals(own_tmp.parent / "probe.db")
    probe.listen(Heard())
    (bound,) = probe.folder.iterdir()  # a socket's name is as long as any other's
    probe.close()
    edge = LIMIT - len(os.fsencode(bound.name)) - 1 - len(".news")  # the longest database path whose folder stays beside it
    base = own_tmp.parent
    for total in range(edge - 8, edge + 9):
        db = db_path_of_length(base, total, letter)
        assert news_travels(db), f"no news at a database path of {total} bytes"
        folder = news_folder(db)
        assert folder == (Path(f"{db}.news") if total <= edge else own_tmp / f"escalate-{os.geteuid()}" / folder.name), total


def test_no_folder_that_fits_means_no_sockets_and_one_line(short_base: Path, monkeypatch, caplog) -> None:
    """A temporary folder whose path is too long for a socket too: the poll serves, never a
    'path too long' error."""
    deep = short_base / ("t" * 90)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    db = db_path_of_length(short_base, 110, "a")
    assert news_folder(db) is None
    with caplog.at_level(logging.WARNING, logger="escalate.durable"):
        listen_and_send(db)  # no 'AF_UNIX path too long'
    assert [r.getMessage() for r in caplog.records if "news between processes is off" in r.getMessage()] == [
        f"escalate: news between processes is off: {db}.news and {deep}/escalate-{os.geteuid()} are too long a path "
        "for a socket; other processes' escalations and decisions are seen by the poll, within seconds"]


def test_the_folder_and_this_users_own_folder_are_made_0700(own_tmp: Path) -> None:
    old = os.umask(0o022)
    try:
        db = db_path_of_length(own_tmp.parent, 100, "a")  # beyond the limit: in this user's folder
        listener = SocketSignals(db)
        listener.listen(lambda message: None)
        try:
            for folder in (own_tmp / f"escalate-{os.geteuid()}", listener.folder):
                assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
        finally:
            listener.close()
    finally:
        os.umask(old)


def made_open(folder: Path) -> None:
    folder.mkdir()
    os.chmod(folder, 0o777)


def made_a_link(folder: Path) -> None:
    target = folder.with_name("elsewhere")
    target.mkdir(mode=0o700)
    folder.symlink_to(target)


def made_a_file(folder: Path) -> None:
    folder.write_text("")


@pytest.mark.parametrize("make", [made_open, made_a_link, made_a_file])
def test_a_folder_that_is_not_ours_alone_is_never_used(tmp_path: Path, make, caplog) -> None:
    """Listening binds nothing in it, sending sends nothing into it: one log line, no exception."""
    db = tmp_path / "x.db"
    folder = Path(f"{db}.news")
    make(folder)
    planted = None
    if folder.is_dir():  # a socket already there, as another process would have bound
        planted = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        planted.bind(str(folder / "planted.sock"))
        planted.setblocking(False)
    with caplog.at_level(logging.WARNING, logger="escalate.durable"):
        listen_and_send(db)
    told = [r.getMessage() for r in caplog.records if "news between processes is off" in r.getMessage()]
    assert len(told) == 2 and all(str(folder) in line for line in told), told  # one per process
    if planted is not None:
        with pytest.raises(BlockingIOError):
            planted.recv(100)  # nothing was sent into it
        assert sorted(p.name for p in folder.iterdir()) == ["planted.sock"]  # nothing bound in it
        planted.close()
