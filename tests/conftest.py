"""Every test gets a database of its own: commands that default to `.escalate/escalate.db`, or to
the demo's database in the user's data folder, never write into the checkout or the real home
(nor into the user's configuration)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def own_database(tmp_path_factory, monkeypatch) -> None:
    folder = tmp_path_factory.mktemp("db")
    monkeypatch.setenv("ESCALATE_DB", f"sqlite:///{folder / 'escalate.db'}")
    monkeypatch.setenv("XDG_DATA_HOME", str(folder / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / "config"))  # what the user trusts (trust.json)
