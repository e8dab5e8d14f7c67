"""tests/pg_server.py starts its server whatever $TMPDIR the runner gives: as root the server runs
as `postgres`, which a $TMPDIR only root may enter (under /root, mode 700) would shut out."""

from __future__ import annotations

import os
import tempfile

import pytest

from tests.pg_server import NoPostgres, PostgresServer


def test_a_server_starts_when_tmpdir_is_closed_to_the_postgres_user(tmp_path, monkeypatch) -> None:
    closed = tmp_path / "root-only"
    closed.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(closed))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read $TMPDIR again
    try:
        server = PostgresServer().start()
    except NoPostgres as exc:
        if os.environ.get("CI") or "could not access directory" in str(exc):
            raise
        pytest.skip(f"PostgreSQL is not available here: {exc}")
    try:
        assert server.new_database().startswith("postgresql://")
    finally:
        server.stop()
