"""A real PostgreSQL server for the worker tests, started once for the session (Debian's
`postgresql`, which .ci/run installs), and a fresh database on it for each test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.pg_server import NoPostgres, PostgresServer


@pytest.fixture(scope="session")
def postgres_server():
    try:
        server = PostgresServer().start()
    except NoPostgres as exc:
        if os.environ.get("CI"):
            raise  # CI installs the server: never skipped there
        pytest.skip(f"PostgreSQL is not available here: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres_server) -> str:
    return postgres_server.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_url(request, tmp_path: Path) -> str:
    """A new database on each backend: a SQLite file, then one on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'escalate.db'}"
    return request.getfixturevalue("pg_url")
