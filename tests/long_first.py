"""The suite's longest test files run first (a pytest plugin, tests/conftest.py loads it).

pytest-xdist hands each process its next tests in the order collected (pyproject: a few at a
time, `--maxschedchunk`): a 30 s test collected last keeps one process busy after the others
have finished, and one collected first is spread over the processes with the others. Only the
order changes, never what a test does. The list: the files of the longest tests of
`--durations` in CI's runs and in whole runs on a loaded host (`-n 2`, which ended with
tests/workers/test_parking.py alone; `-n 6`, where the real Claude Code's test took 150 s and
was collected late), longest first; a file missing from it runs in its collected place.
"""

from __future__ import annotations

import pytest

LONGEST_FILES = (
    "tests/acp/test_real_claude_code.py",
    "tests/models/test_hostile_replies.py",
    "tests/durable/test_crash_parking.py",
    "tests/runtime/test_run_demo_offline.py",
    "tests/workers/test_parking.py",
    "tests/durable/test_crash_late_heartbeat.py",
    "tests/acp/test_acp_flow_budget.py",
    "tests/durable/test_cli_shell_path.py",
    "tests/acp/test_acp_resume.py",
    "tests/outside/test_claude_code.py",
    "tests/durable/test_run_queue.py",
    "tests/durable/test_pg_workers_two.py",
    "tests/acp/test_acp_takeover.py",
    "tests/durable/test_crash.py",
    "tests/web/test_browser.py",
    "tests/models/test_cli_real.py",
    "tests/lang/test_large_programs.py",
    "tests/outside/test_mcp_http.py",
    "tests/workers/test_workers.py",
    "tests/workers/test_consoles.py",
    "tests/acp/test_acp_cli.py",
    "tests/durable/test_scale_grace.py",
    "tests/lang/test_backends_agree.py",
    "tests/decide/test_decide_cli.py",
    "tests/durable/test_pickle_rows.py",
    "tests/durable/test_pg_locks.py",
    "tests/durable/test_cli.py",
    "tests/workers/test_crash_postgres.py",
    "tests/runtime/test_events_file.py",
)

_RANK = {path: rank for rank, path in enumerate(LONGEST_FILES)}


def rank(nodeid: str) -> int:
    """Where a test runs among the longest files (their rank), or after them all."""
    return _RANK.get(nodeid.split("::", 1)[0], len(LONGEST_FILES))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: rank(item.nodeid))  # stable: each file's tests keep their order
