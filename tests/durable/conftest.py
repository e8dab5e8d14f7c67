"""The PostgreSQL server of the worker tests (one per session, a fresh database per test)."""

from tests.workers.conftest import pg_url, postgres_server  # noqa: F401  (fixtures)
