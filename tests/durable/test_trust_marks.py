"""A new database's marker and the person's trust in it (engine/durable/trust.py): a process
killed while it marks a new database, and processes marking databases at the same time, never
leave a database of this user's "not yours" (found by `bench_durable.py --kills`: a `run` killed
between writing the marker and trusting it left a database whose runs were never continued)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from engine.durable import trust


def _engine(path: Path) -> sa.Engine:
    return sa.create_engine(f"sqlite:///{path}")


def test_a_process_killed_while_it_marks_a_new_database_leaves_it_its_own(tmp_path, monkeypatch) -> None:
    url = f"sqlite:///{tmp_path / 'escalate.db'}"
    engine = _engine(tmp_path / "escalate.db")
    real_replace = os.replace

    def killed(src, dst, *args, **kwargs):  # the configuration's write is where the kill lands
        if str(dst).endswith("trust.json"):
            raise KeyboardInterrupt("killed")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        trust.assess(engine, url)
    monkeypatch.setattr(os, "replace", real_replace)
    verdict = trust.assess(engine, url)  # the next process to open it
    assert verdict.trusted, verdict.reason


def test_databases_marked_at_the_same_time_are_all_trusted(tmp_path, monkeypatch) -> None:
    real_read = Path.read_text

    def slow_read(self: Path, *args, **kwargs) -> str:  # widen the read-change-write window
        text = real_read(self, *args, **kwargs)
        if self.name == "trust.json":
            time.sleep(0.05)
        return text

    monkeypatch.setattr(Path, "read_text", slow_read)
    files = [tmp_path / f"db{i}.sqlite" for i in range(4)]
    start = threading.Barrier(len(files))
    errors: list[BaseException] = []

    def open_one(file: Path) -> None:
        try:
            start.wait()
            trust.assess(_engine(file), f"sqlite:///{file}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    monkeypatch.setattr(Path, "read_text", real_read)
    for file in files:
        verdict = trust.assess(_engine(file), f"sqlite:///{file}")
        assert verdict.trusted and verdict.reason == "created by you", (file.name, verdict.reason)
