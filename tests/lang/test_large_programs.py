"""Programs built to keep `escalate check` busy: each one is handled in linear time (the generous
time limit only catches a hang; tests/benchmarks/bench_hostile_sr.py prints the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.lang.compiler import compile_source


# Only a hang fails on time: these take 0.3-5.4 s of CPU, and the longest took 49 s of wall with
# six test processes on two loaded cores (60 s was then a bet on the host's load).
HANG = 180


def check(text: str):
    return compile_source(text, Path("/tmp/escalate-tests/large.sr"))


@pytest.mark.timeout(HANG)
def test_many_interpolations_in_one_text():
    # Each `${...}` counted the newlines from the text's start: 400,000 took minutes.
    r = check('flow main:\n    $x = 1\n    log "' + "${x}" * 400_000 + '"\n    return 1\n')
    assert r.ok, r.diagnostics[:1]


@pytest.mark.timeout(HANG)
def test_a_long_flow():
    # Each assignment copied the set of variables assigned so far.
    r = check("flow main:\n" + "".join(f"    $v{i} = 1\n" for i in range(150_000)) + "    return $v149999\n")
    assert r.ok, r.diagnostics[:1]


@pytest.mark.timeout(HANG)
def test_many_flows_calling_each_other_are_not_tracked():
    # What every flow may find set is a union over the flows that reach it: quadratic in time and
    # memory. Past a budget the check says it skips variables (W0003) and the run checks them.
    chain = "".join(f"flow f{i}:\n    $v{i} = 1\n    return run f{i + 1}\n" for i in range(3000)) + "flow f3000:\n    return $v1\n"
    r = check(chain)
    assert r.ok and [(d.code, d.line) for d in r.diagnostics] == [("W0003", 1)]
    small = "".join(f"flow f{i}:\n    $v{i} = 1\n    return run f{i + 1}\n" for i in range(30)) + "flow f30:\n    return $nope\n"
    assert [d.code for d in check(small).diagnostics] == ["E0002"]  # normal programs keep every check


@pytest.mark.timeout(HANG)
def test_many_typos_among_many_names():
    # "did you mean" compared every typo with every name: hours for 50,000 of each.
    n = 30_000
    r = check("flow main:\n" + "".join(f"    $var_{i} = 1\n" for i in range(n)) + "".join(f"    log $vaar_{i}\n" for i in range(n)))
    assert len(r.diagnostics) == n and {d.code for d in r.diagnostics} == {"E0002"}
    # Suggestions while a budget of names compared lasts: the first typos get one, the last do not.
    assert r.diagnostics[0].help == "did you mean '$var_0'?" and r.diagnostics[-1].help is None


@pytest.mark.timeout(HANG)
def test_long_agent_chains_and_their_cycles():
    # The cycle search recursed (a chain of 1,000 agents was "nests too deeply") and built every
    # cycle's text (quadratic when one agent refers back to all the others).
    n = 5_000
    agents = "prompt p: 'x'\n" + "".join(f"agent a{i}:\n    instruction p\n    delegate a{i + 1}\n" for i in range(n))
    assert check(agents + f"agent a{n}:\n    instruction p\n").ok
    r = check(agents + f"agent a{n}:\n    instruction p\n    use " + ", ".join(f"a{i}" for i in range(n)) + "\n")
    assert len(r.diagnostics) == n and {d.code for d in r.diagnostics} == {"E0011"}
    assert r.diagnostics[0].message == f"circular agent reference: a0 -> a1 -> a2 -> ... -> a{n - 1} -> a{n} -> a0 ({n + 1} agents)"


@pytest.mark.timeout(HANG)
def test_a_match_longer_than_python_can_compile():
    # `when` clauses become an elif chain, which Python's own parser nests: at about 5,000 it
    # gives up with a RecursionError, at 8,000 with a MemoryError ("internal compiler error").
    for n in (5_000, 8_000):
        r = check("flow main:\n    match $input\n" + "".join(f'        when "{i}" -> log {i}\n' for i in range(n)) + "    end\n")
        assert [(d.code, d.line, d.message) for d in r.diagnostics] == [
            ("E0022", 2, f"nests too deeply to run: {n} `when`/`elif` branches in one chain")]
