"""A real PostgreSQL server for the tests and benchmarks: Debian's `postgresql` package (installed
by .ci/run), started on a free 127.0.0.1 port with its data in a temporary folder, stopped at
the end. initdb refuses to run as root, so as root the server runs as the `postgres` user the
package creates."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Iterator


class NoPostgres(RuntimeError):
    pass


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise NoPostgres("no PostgreSQL server installed (apt-get install postgresql)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self) -> None:
        self.bin = _bin_dir()
        # As root the server runs as `postgres`, which must reach the folder: a runner's $TMPDIR
        # may be one it cannot (under /root), /tmp it always can.
        self.folder = Path(tempfile.mkdtemp(prefix="escalate-pg-", dir="/tmp" if os.geteuid() == 0 else None))
        self.data = self.folder / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            self._as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(self.folder, "postgres")
        self.started = False

    def _run(self, *args: str, timeout: float = 120) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise NoPostgres(f"{' '.join(args[:2])} failed: {(done.stderr or done.stdout).strip()[-800:]}")

    def start(self) -> "PostgresServer":
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c max_connections=300 -c synchronous_commit=off")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"),
                  "-w", "-t", "60", "start")
        self.started = True
        return self

    def stop(self) -> None:
        if self.started:
            try:
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop", timeout=60)
            except (NoPostgres, subprocess.TimeoutExpired):
                pass
            self.started = False
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database on this server; returns its URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def serving() -> Iterator[PostgresServer]:
    """A started server for a fixture to yield, stopped after; skipped where none can start,
    except on CI, which installs it: never skipped there."""
    import pytest

    try:
        server = PostgresServer().start()
    except NoPostgres as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"PostgreSQL is not available here: {exc}")
    try:
        yield server
    finally:
        server.stop()
