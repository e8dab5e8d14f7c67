"""An ACP agent's processes, and the commands it runs through escalate, start at a lower CPU
priority than escalate (engine/runtime/acp/priority.py): the console showing them must win a
core against them. Read back from the agent itself and from a command it ran."""

from __future__ import annotations

import os
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
    handle = acp.start(engine, acp.script([[{"run": ["cat", ["/proc/self/stat", "/proc/self/autogroup"]]},
                                            {"say": "ok"}]]))
    assert await handle.wait() is RunStatus.DONE, handle.error
    nice, autogroup = expected(7)
    started = next(t for t in acp.trace() if t["event"] == "initialize")
    assert (started["nice"], started["autogroup"]) == (nice, autogroup)
    output = next(t for t in acp.trace() if t["event"] == "run")["result"].removeprefix("exit 0: ")
    stat, *group = output.split("\n")
    assert int(stat.split()[18]) == nice  # /proc/PID/stat: the 19th field is the nice value
    if autogroup is not None:
        assert group and group[0].split()[-1] == str(autogroup)


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
