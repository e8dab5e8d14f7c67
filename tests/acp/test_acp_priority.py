"""ACP agents' processes, and the commands they run through escalate, start at a lower CPU
priority than escalate when several run at once (engine/runtime/acp/priority.py): the console
showing them must win a core against them, and a lone agent keeps its whole share. Read back
from the agents themselves and from a command one of them ran."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from engine.runtime.acp.priority import (DEFAULT_NICE, MAX_NICE, NICE_VARIABLE, Crowd, NiceError, _autogroup_nice,
                                         agent_niceness)
from engine.runtime.run_status import RunStatus


def own_autogroup() -> int | None:
    """None without autogroups, or in a task group that is not one (CI's container: an empty file)."""
    path = Path("/proc/self/autogroup")
    words = path.read_text().split() if path.exists() else []
    return int(words[words.index("nice") + 1]) if "nice" in words else None


def expected(by: int) -> tuple[int, int | None]:
    """The nice value and autogroup nice value of a process `by` below this one."""
    autogroup = own_autogroup()
    return (min(MAX_NICE, os.getpriority(os.PRIO_PROCESS, 0) + by),
            None if autogroup is None or by == 0 else min(MAX_NICE, autogroup + by))


def started(acp, n: int) -> list[dict]:  # noqa: ANN001
    return [t for t in acp.trace() if t["event"] == "initialize"][:n]


async def until(check, handles) -> None:  # noqa: ANN001
    for _ in range(3000):  # a hang guard, not a timing
        if check() or any(h.finished_at is not None for h in handles):
            return
        await asyncio.sleep(0.01)


def own_or_group(entry: dict) -> tuple[int, int | None]:
    """An agent's nice and, when escalate lowered it, its autogroup's (a session of its own starts at 0)."""
    return entry["nice"], entry["autogroup"] if entry["autogroup"] else None


async def test_one_agent_runs_as_escalate_and_the_next_ones_lower_with_their_commands(acp, monkeypatch):
    monkeypatch.setenv(NICE_VARIABLE, "7")
    engine = acp.engine()
    first = acp.start(engine, acp.script([[{"say": "first\n"}, {"wait": 60}]]), task="first")
    await until(lambda: len(started(acp, 2)) == 1, [first])
    marker = f"{30 + random.random():.6f}"  # this test's command among the machine's processes
    second = acp.start(engine, acp.script([[{"spawn": ["sleep", [marker]]}, {"wait": 60}]]), task="second")
    await until(lambda: any(t["event"] == "spawn" for t in acp.trace()), [first, second])
    alone, joined = started(acp, 2)
    assert own_or_group(alone) == expected(0)  # alone: as escalate
    assert own_or_group(joined) == expected(3)  # the 2nd running at once: log_1.25(2) = 3 lower
    command = next(pid for pid in _pids() if _cmdline(pid) == ["sleep", marker])
    assert int(Path(f"/proc/{command}/stat").read_text().rsplit(")", 1)[1].split()[16]) == expected(3)[0]  # field 19: nice
    if expected(3)[1] is not None:
        assert Path(f"/proc/{command}/autogroup").read_text().split()[-1] == str(expected(3)[1])
    first.cancel()
    second.cancel()
    assert await first.wait() is RunStatus.CANCELLED and await second.wait() is RunStatus.CANCELLED


async def test_zero_leaves_every_agent_as_escalate(acp, monkeypatch):
    monkeypatch.setenv(NICE_VARIABLE, "0")
    engine = acp.engine()
    first = acp.start(engine, acp.script([[{"wait": 60}]]), task="first")
    await until(lambda: len(started(acp, 2)) == 1, [first])
    second = acp.start(engine, acp.script([[{"say": "ok"}]]), task="second")
    assert await second.wait() is RunStatus.DONE, second.error
    assert [own_or_group(t) for t in started(acp, 2)] == [expected(0), expected(0)]
    first.cancel()
    assert await first.wait() is RunStatus.CANCELLED


async def test_a_bad_niceness_is_one_line_naming_the_agent(acp, monkeypatch):
    monkeypatch.setenv(NICE_VARIABLE, "high")
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[{"say": "ok"}]]))
    assert await handle.wait() is RunStatus.FAILED
    assert handle.error.startswith("ACP agent 'main' (") and "$ESCALATE_ACP_NICE='high': give a whole number" in handle.error
    assert "\n" not in handle.error and not acp.trace()  # not started


def test_each_agent_running_at_once_starts_lower_up_to_the_cap():
    crowd = Crowd()
    assert [crowd.join(DEFAULT_NICE) for _ in range(12)] == [0, 3, 5, 6, 7, 8, 9, 9, 10, 10, 10, 10]
    for _ in range(11):
        crowd.leave()
    assert crowd.offset(DEFAULT_NICE) == 0 and crowd.join(DEFAULT_NICE) == 3  # one left running: the next is the 2nd
    assert Crowd().offset(MAX_NICE) == 0
    many = Crowd()
    assert [many.join(MAX_NICE) for _ in range(20)][-1] == 13 and [many.join(0) for _ in range(3)] == [0, 0, 0]


@pytest.mark.parametrize("given, value", [("", DEFAULT_NICE), (" 3 ", 3), ("0", 0), ("19", 19)])
def test_niceness_read_from_the_environment(given, value):
    assert agent_niceness({NICE_VARIABLE: given}) == value


@pytest.mark.parametrize("given", ["-1", "20", "1.5", "ten", "99999999999999999999"])
def test_niceness_out_of_range_is_refused(given):
    with pytest.raises(NiceError, match="give a whole number from 0"):
        agent_niceness({NICE_VARIABLE: given})


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:  # gone meanwhile
        return []


@pytest.mark.parametrize("text, value", [("/autogroup-42 nice 3\n", 3), ("", None), ("garbage", None)])
def test_an_autogroup_read_as_the_kernel_writes_it_or_empty_in_a_container(tmp_path, text, value):
    """In a cgroup that is not an autogroup (CI's container) the kernel leaves the file empty."""
    (tmp_path / "autogroup").write_text(text)
    assert _autogroup_nice(tmp_path / "autogroup") == value
