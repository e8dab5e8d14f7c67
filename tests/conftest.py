"""Every test gets a database of its own: commands that default to `.escalate/escalate.db`, or to
the demo's database in the user's data folder, never write into the checkout or the real home
(nor into the user's configuration). The user's cache folder (rules snapshots, the grammar's
analysis) is one of the session's, never the real `~/.cache/escalate`."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.long_first import pytest_collection_modifyitems  # noqa: F401  (the longest files first)


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory) -> Iterator[None]:
    """$XDG_CACHE_HOME for the session (each test process's, and the processes tests start):
    rules/snapshot.py's user_cache and engine/lang/lark_backend.py's grammar cache read it. One
    folder for the session, not per test: the grammar's analysis is then made once, not per test.
    (tests/outside gives each of its tests a folder of its own instead.)"""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(autouse=True)
def own_database(tmp_path_factory, monkeypatch) -> None:
    folder = tmp_path_factory.mktemp("db")
    monkeypatch.setenv("ESCALATE_DB", f"sqlite:///{folder / 'escalate.db'}")
    monkeypatch.setenv("XDG_DATA_HOME", str(folder / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / "config"))  # what the user trusts (trust.json)
