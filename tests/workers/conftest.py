"""A real PostgreSQL server for the worker tests, started once for the session (Debian's
`postgresql`, which .ci/run installs), and a fresh database on it for each test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pg_server import serving


@pytest.fixture(scope="session")
def postgres_server():
    yield from serving()


@pytest.fixture
def pg_url(postgres_server) -> str:
    return postgres_server.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_url(request, tmp_path: Path) -> str:
    """A new database on each backend: a SQLite file, then one on the session's PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'escalate.db'}"
    return request.getfixturevalue("pg_url")
