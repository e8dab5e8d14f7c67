"""Queueing thousands of runs (`run --detach`, engine.queue_run) on one database: each gets its
own id, and the DBOS client that queues them is made once (each one made checks the
connection with a query)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from engine.services import open_services
from tests.workers.procs import ASK, ASK_SCRIPT

pytestmark = pytest.mark.timeout(300)


async def test_runs_whose_first_32_random_bits_agree_get_two_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 32 random bits two of 10,000 runs share an id about once in a hundred databases (it
    happened at the 4,321st run of a benchmark: the queueing stopped on a UNIQUE constraint)."""
    from engine.runtime.script import load_script
    from rules import load_rules

    services = await open_services(f"sqlite:///{tmp_path / 'escalate.db'}", identity="escalate run")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(str(ASK_SCRIPT)))
        workflow = engine.load(ASK)
        draws = iter([uuid.UUID("0123abcd" + "0" * 24), uuid.UUID("0123abcd" + "f" * 24)])
        real = uuid.uuid4

        def drawn() -> uuid.UUID:  # the run ids' draws; DBOS's own stay random
            return next(draws) if sys._getframe(1).f_globals["__name__"] == "engine.runtime.engine" else real()

        monkeypatch.setattr(uuid, "uuid4", drawn)
        first, second = engine.queue_run(workflow, input="a"), engine.queue_run(workflow, input="b")
        assert first != second
        assert [services.db.get_run(i)["input"] for i in (first, second)] == ["a", "b"]
    finally:
        services.close()


async def test_one_dbos_client_queues_every_run_of_a_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dbos

    from engine.runtime.script import load_script
    from rules import load_rules

    made = []
    real_init = dbos.DBOSClient.__init__

    def counted(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        made.append(kwargs.get("lazy"))
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(dbos.DBOSClient, "__init__", counted)
    services = await open_services(f"sqlite:///{tmp_path / 'escalate.db'}", identity="escalate run")
    try:
        engine = services.engine(load_rules(), workspace=tmp_path, script=load_script(str(ASK_SCRIPT)))
        workflow = engine.load(ASK)
        ids = [engine.queue_run(workflow, input=f"go {i}") for i in range(20)]
        assert len(set(ids)) == 20 and len(made) == 1
        assert {row["run_id"] for row in services.db.list_runs()} == set(ids)
    finally:
        services.close()
