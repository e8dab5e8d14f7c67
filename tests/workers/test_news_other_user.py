"""Another local user (a real second uid, through `setpriv`) makes the SQLite news folder before
the victim does: open to all (0777, to hear the victim's news), closed (0700, to crash the
victim's processes), a symbolic link to a folder of theirs, or this user's predictable folder in
the temporary folder (long database paths). The victim's `escalate run`, `worker` and `console`
work on (the poll serves), say so in one line, never show a traceback, and the other user hears
nothing. The victim is this user, with file permissions applying to it even as root."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine.durable.database import Database
from engine.durable.signals import news_folder
from tests.e2e.pty_console import PtyConsole
from tests.unprivileged import OTHER_UID, as_other_user, bound_by_permissions
from tests.workers.procs import ASK, ASK_SCRIPT, answer_directly
from tests.workers.test_workers import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(os.geteuid() != 0 and not os.environ.get("CI"), reason="a second OS user needs root (setpriv)"),
]

NEWS_OFF = "news between processes is off"

# The other user: makes the folder (and whatever leads to it), binds a socket anyone may send to,
# and writes down every datagram it receives until told to stop.
LISTENER = r"""
import os, socket, sys
folders, mode, link, got = sys.argv[1].split("|"), int(sys.argv[2], 8), sys.argv[3], sys.argv[4]
os.umask(0)
for folder in folders:
    os.mkdir(folder, 0o777)
    os.chmod(folder, mode)
if link:
    os.symlink(folders[-1], link)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(os.path.join(folders[-1], "listening.sock"))
s.settimeout(0.1)
open(got + ".ready", "w").close()
with open(got, "ab") as out:
    while not os.path.exists(got + ".stop"):
        try:
            out.write(s.recv(65536) + b"\n")
            out.flush()
        except socket.timeout:
            pass
"""


class Place:
    """The folders of one test: a shared folder (1777) holding the database, the temporary
    folder everyone uses (1777), the victim's workspace and the other user's own folder."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.shared, self.tmp, self.work, self.other = (base / n for n in ("shared", "tmp", "work", "other"))
        for folder in (self.shared, self.tmp):
            folder.mkdir()
            os.chmod(folder, 0o1777)
        self.work.mkdir()
        self.other.mkdir(mode=0o700)
        os.chown(self.other, OTHER_UID, OTHER_UID)
        self.got = self.other / "got"
        self._listener: subprocess.Popen[bytes] | None = None

    def plant(self, db: Path, how: str) -> None:
        """The other user makes the folder the victim's processes would use for `db`, first."""
        folder = news_folder(db)
        assert folder is not None
        if how == "fallback":  # everything under the temporary folder, from its first component on
            top = self.tmp / folder.relative_to(self.tmp).parts[0]
            chain = [top] if top == folder else [top, folder]
            self._listen(chain, "777")
        elif how == "link":
            self._listen([self.shared / "elsewhere"], "777", link=folder)
        else:
            self._listen([folder], {"open": "777", "closed": "700"}[how])

    def _listen(self, folders: list[Path], mode: str, link: Path | None = None) -> None:
        self._listener = subprocess.Popen(
            [*as_other_user(), sys.executable, "-c", LISTENER, "|".join(map(str, folders)), mode, str(link or ""), str(self.got)])
        wait_until(lambda: Path(f"{self.got}.ready").exists() or self._listener.poll() is not None, 60, "the other user")
        assert self._listener.poll() is None, "the other user's listener did not start"

    def heard(self) -> bytes:
        """Everything the other user received (its listener stopped)."""
        if self._listener is not None:
            Path(f"{self.got}.stop").touch()
            self._listener.wait(30)
        return self.got.read_bytes() if self.got.exists() else b""


@pytest.fixture
def place(monkeypatch) -> Path:
    base = Path(tempfile.mkdtemp(prefix="news-users-"))
    os.chmod(base, 0o755)  # the other user may reach what is shared
    place = Place(base)
    monkeypatch.setenv("TMPDIR", str(place.tmp))  # every process, the victim's and this one
    monkeypatch.setattr(tempfile, "tempdir", str(place.tmp))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    try:
        yield place
    finally:
        place.heard()
        shutil.rmtree(base, ignore_errors=True)


def database(place: Place, how: str) -> Path:
    if how != "fallback":
        return place.shared / "team.db"
    deep = place.shared / ("d" * 90)  # too long a path for a socket beside the database
    deep.mkdir()
    return deep / "team.db"


def victim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*bound_by_permissions(), sys.executable, "-m", "engine", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180)


def one_line_no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    told = [line for line in stderr.splitlines() if NEWS_OFF in line]
    assert len(told) == 1, stderr


@pytest.mark.parametrize("how", ["open", "closed", "link", "fallback"])
def test_run_works_on_with_another_users_news_folder_and_they_hear_nothing(place: Place, how: str) -> None:
    db = database(place, how)
    place.plant(db, how)
    answers = place.work / "answers.yaml"
    answers.write_text("- {responseType: option, selectedOption: keep}\n- {responseType: text, textResponse: ship}\n")
    done = victim("run", str(ASK), "--script", str(ASK_SCRIPT), "--db", f"sqlite:///{db}", "--answers", str(answers),
                  cwd=place.work)
    assert (done.returncode, done.stdout) == (0, "built | ship\n"), done.stderr
    assert place.heard() == b""
    one_line_no_traceback(done.stderr)


def test_a_worker_works_on_by_the_poll_with_another_users_closed_news_folder(place: Place) -> None:
    db = database(place, "closed")
    url = f"sqlite:///{db}"
    place.plant(db, "closed")
    err = (place.work / "worker.err").open("w")
    worker = subprocess.Popen([*bound_by_permissions(), sys.executable, "-m", "engine", "worker", "--db", url],
                              cwd=place.work, stdout=subprocess.DEVNULL, stderr=err)
    store = None
    try:
        queued = victim("run", str(ASK), "--script", str(ASK_SCRIPT), "--db", url, "--detach", cwd=place.work)
        assert queued.returncode == 0, queued.stderr
        run_id = queued.stdout.strip()
        store = Database(url)
        for _ in range(2):  # each escalation answered from here, found by the worker's poll
            wait_until(lambda: bool(store.pending_escalations()) or worker.poll() is not None, 120, "an escalation")
            assert worker.poll() is None, (place.work / "worker.err").read_text()
            assert answer_directly(store, store.pending_escalations()[0])
        wait_until(lambda: store.get_run(run_id)["status"] == "done" or worker.poll() is not None, 120, "the run")
        assert store.get_run(run_id)["status"] == "done", (place.work / "worker.err").read_text()
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
        worker.wait(60)
        err.close()
        if store is not None:
            store.close()
    one_line_no_traceback((place.work / "worker.err").read_text())
    assert place.heard() == b""


def test_a_console_lists_and_answers_by_the_poll_with_another_users_open_news_folder(place: Place) -> None:
    db = database(place, "open")
    url = f"sqlite:///{db}"
    place.plant(db, "open")
    run = subprocess.Popen([*bound_by_permissions(), sys.executable, "-m", "engine", "run", str(ASK), "--script",
                            str(ASK_SCRIPT), "--db", url, "--wait"], cwd=place.work, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    console = PtyConsole(place.work, "--db", url, prefix=tuple(bound_by_permissions()))
    try:
        console.wait_for(b"Keep the old API?", 120)
        console.type("1")  # the run, waiting, finds the decision by its poll and asks the next
        console.wait_for(b"Ship built?", 120)
        store = Database(url)
        try:
            (second,) = store.pending_escalations()
        finally:
            store.close()
        answered = victim("answer", second["id"], "--text", "ship", "--db", url, cwd=place.work)
        assert answered.returncode == 0, answered.stderr
        out, err = run.communicate(timeout=120)
        assert (run.returncode, out) == (0, "built | ship\n"), err
        assert place.heard() == b""
        one_line_no_traceback(err)
    finally:
        console.close()
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert b"Traceback" not in console.output
    log = place.tmp / f"escalate-{os.geteuid()}" / "escalate-console.log"
    assert NEWS_OFF in log.read_text(), log.read_text()
