"""Durable runs survive SIGKILL: real `escalate run`/`resume` processes on one SQLite file,
killed at random points (during agent turns and commands, during a pending decision, between
an answer and the agent's next turn), continued each time. Every run must end as an
uninterrupted run does, with exactly one decision per escalation and no finished step run
again. And a worker killed while twenty answered runs finish their last turns: every run over by
then keeps its whole event log (issue 22, finding 12)."""

from __future__ import annotations

import random

import pytest

from tests.durable.crash_harness import EXPECTED, kill_while_finishing, run_with_kills, runs_until_killed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_an_uninterrupted_run_gives_the_expected_result(tmp_path) -> None:
    report = run_with_kills(tmp_path, kills=0, rng=random.Random(0))
    assert (report.exit_code, report.result) == (0, EXPECTED)
    assert report.escalations == 3 and report.decisions_missing == 0
    assert report.commands_run == ["one", "two"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_kills_lose_nothing_and_repeat_nothing(tmp_path, seed: int) -> None:
    """Eight kills landed, each run continued to its right end."""
    for report in runs_until_killed(tmp_path, 8, random.Random(seed)):
        assert (report.exit_code, report.result) == (0, EXPECTED), report
        assert report.escalations == 3, report
        assert report.decisions_missing == 0 and report.decision_events_doubled == 0, report
        assert report.steps_repeated == 0, report


@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", [0, 1])
def test_runs_over_when_their_worker_is_killed_keep_their_whole_log(tmp_path, seed: int) -> None:
    report = kill_while_finishing(tmp_path, random.Random(seed))
    assert report.lost_events == [], report
    assert report.finished_after == report.runs and report.lost_after == [], report
