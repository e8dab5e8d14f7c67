"""An ACP agent's processes, and the commands it runs through escalate, start at a lower CPU
priority than escalate (engine/runtime/acp/priority.py): the console showing them must win a
core against them. Read back from the agent itself and from a command it ran."""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import pytest

from engine.runtime.acp.priority import DEFAULT_NICE, MAX_NICE, NICE_VARIABLE, NiceError, agent_niceness
from engine.runtime.run_status import RunStatus


def own_autogroup() -> int | None:
    path = Path("/proc/self/autogroup")
    if not path.exists():
        return None
    words = path.read_text().split()
    return int(words[words.index("nice") + 1])


def expected(by: int) -> tuple[int, int | None]:
    """The nice value and autogroup nice value of a process `by` below this one."""
    autogroup = own_autogroup()
    return (min(MAX_NICE, os.getpriority(os.PRIO_PROCESS, 0) + by),
            None if autogroup is None else min(MAX_NICE, autogroup + by))


async def test_the_agent_and_its_commands_run_below_escalate(acp, monkeypatch):
    monkeypatch.setenv(NICE_VARIABLE, "7")
    engine = acp.engine()
    marker = f"{30 + random.random():.6f}"  # this test's command among the machine's processes
    handle = acp.start(engine, acp.script([[{"spawn": ["sleep", [marker]]}, {"wait": 60}]]))
    for _ in range(3000):
        if any(t["event"] == "spawn" for t in acp.trace()) or handle.finished_at is not None:
            break
        await asyncio.sleep(0.01)
    nice, autogroup = expected(7)
    started = next(t for t in acp.trace() if t["event"] == "initialize")
    assert (started["nice"], started["autogroup"]) == (nice, autogroup)  # the agent, from its first message
    command = next(pid for pid in _pids() if _cmdline(pid) == ["sleep", marker])
    assert int(Path(f"/proc/{command}/stat").read_text().rsplit(")", 1)[1].split()[16]) == nice  # field 19: nice
    if autogroup is not None:
        assert Path(f"/proc/{command}/autogroup").read_text().split()[-1] == str(autogroup)
    handle.cancel()
    assert await handle.wait() is RunStatus.CANCELLED


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:  # gone meanwhile
        return []


async def test_by_default_they_run_ten_below_and_zero_leaves_them_as_escalate(acp, monkeypatch):
    monkeypatch.delenv(NICE_VARIABLE, raising=False)
    engine = acp.engine()
    assert await acp.start(engine, acp.script([[{"say": "ok"}]])).wait() is RunStatus.DONE
    monkeypatch.setenv(NICE_VARIABLE, "0")
    assert await acp.start(engine, acp.script([[{"say": "ok"}]])).wait() is RunStatus.DONE
    first, second = [t for t in acp.trace() if t["event"] == "initialize"]
    assert (first["nice"], first["autogroup"]) == expected(DEFAULT_NICE)
    assert (second["nice"], second["autogroup"]) == expected(0)


async def test_a_bad_niceness_is_one_line_naming_the_agent(acp, monkeypatch):
    monkeypatch.setenv(NICE_VARIABLE, "high")
    engine = acp.engine()
    handle = acp.start(engine, acp.script([[{"say": "ok"}]]))
    assert await handle.wait() is RunStatus.FAILED
    assert handle.error.startswith("ACP agent 'main' (") and "$ESCALATE_ACP_NICE='high': give a whole number" in handle.error
    assert "\n" not in handle.error and not acp.trace()  # not started


@pytest.mark.parametrize("given, value", [("", DEFAULT_NICE), (" 3 ", 3), ("0", 0), ("19", 19)])
def test_niceness_read_from_the_environment(given, value):
    assert agent_niceness({NICE_VARIABLE: given}) == value


@pytest.mark.parametrize("given", ["-1", "20", "1.5", "ten", "99999999999999999999"])
def test_niceness_out_of_range_is_refused(given):
    with pytest.raises(NiceError, match="give a whole number from 0"):
        agent_niceness({NICE_VARIABLE: given})
