"""The durable runs' crash harness (tests/durable/crash_harness.py) on PostgreSQL: real `escalate
run` / `resume` processes killed with SIGKILL at random points and continued, until the run ends
as an uninterrupted one does, with one decision per escalation and no finished step repeated."""

from __future__ import annotations

import random

import pytest

from tests.durable.crash_harness import EXPECTED, runs_until_killed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("seed", [11])
def test_random_kills_on_postgresql_lose_nothing_and_repeat_nothing(tmp_path, postgres_server, seed: int) -> None:
    """Four kills landed, each run continued to its right end (a run may end before the kills
    due: they land on a new run, on a new database)."""
    for report in runs_until_killed(tmp_path, 4, random.Random(seed), new_db=postgres_server.new_database):
        assert (report.exit_code, report.result) == (0, EXPECTED), report
        assert report.escalations == 3, report
        assert report.decisions_missing == 0 and report.decision_events_doubled == 0, report
        assert report.steps_repeated == 0, report
