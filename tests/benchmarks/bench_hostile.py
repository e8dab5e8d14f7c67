"""Hostile agent replies and commands (issue 15): time to look at them, by size and shape.

Prints figures; asserts nothing. Linear means the time per 100 kB stays flat as the size grows;
replies longer than json_scan.MAX_SCAN_CHARS are looked at up to there, so the 1 MB row costs
what the cap costs. Commands longer than rules.shell.MAX_COMMAND_CHARS are not parsed at all
(a human decides), so their table stops at that size.

Run: PYTHONPATH=. python tests/benchmarks/bench_hostile.py
"""

from __future__ import annotations

import json
import time
from typing import Callable

from engine.escalation.json_scan import MAX_SCAN_CHARS
from engine.escalation.protocol import find_escalation
from engine.runtime.schemas import SchemaMismatch, parse_json
from rules import default_rules
from rules.shell import MAX_COMMAND_CHARS

SIZES = (10_000, 100_000, 1_000_000)
OBJ = json.dumps({"escalation": True, "question": "q?"})


def repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


REPLIES: dict[str, Callable[[int], str]] = {
    "many { (bare word)": lambda n: "escalation " + "{" * n,
    "many { (quoted key)": lambda n: '"escalation" ' + "{" * n,
    "deep nesting": lambda n: repeat('{"escalation":', n),
    "deep nesting, closed": lambda n: repeat('{"a":', n // 2) + OBJ + repeat("}", n // 2),
    'many "escalation" words': lambda n: repeat('"escalation" ', n),
    "many small objects": lambda n: repeat('{"escalation": false} ', n),
    "many broken objects": lambda n: repeat('{"escalation": tru} ', n),
    "stray quotes in braces": lambda n: repeat('{"', n) + '"escalation"',
    "object after noise": lambda n: "{" * (min(n, MAX_SCAN_CHARS) - len(OBJ) - 1) + OBJ,
}


def timed(fn: Callable[[], object], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def expecting_schema(text: str) -> None:
    try:
        parse_json(text)
    except SchemaMismatch:
        pass


COMMANDS: dict[str, Callable[[int], str]] = {
    "many simple commands": lambda n: repeat("rm -r -f x; ", n),
    "one command, many words": lambda n: repeat("rm -r -f ", n),
    "many quotes": lambda n: repeat("'a'\"b\"", n),
    "many substitutions": lambda n: repeat("$(rm)", n),
    "many backslashes": lambda n: "\\" * (n // 2),
}
COMMAND_SIZES = (1_000, 10_000, MAX_COMMAND_CHARS)


def command_verdict(command: str) -> None:
    RULES.match_tool("task", "run_command", {"command": command})


RULES = default_rules()


def table(
    title: str, cases: dict[str, Callable[[int], str]], call: Callable[[str], object],
    sizes: tuple[int, ...] = SIZES, cap: int = MAX_SCAN_CHARS,
) -> None:
    print(f"\n{title} (best of 3; ms, and ms per 100 kB looked at)")
    print(f"{'shape':28}" + "".join(f"{size // 1000:>10} kB        " for size in sizes))
    for name, make in cases.items():
        cells = []
        for size in sizes:
            text = make(size)
            seconds = timed(lambda: call(text))
            looked_at = min(len(text), cap)
            cells.append(f"{seconds * 1000:9.1f} ({seconds * 1000 * 100_000 / looked_at:5.1f})  ")
        print(f"{name:28}" + "".join(cells))


def main() -> None:
    print(f"replies are looked at up to {MAX_SCAN_CHARS:,} characters")
    table("find_escalation: the escalation JSON in a reply", REPLIES, find_escalation)
    table("parse_json: an `expecting Schema` reply", REPLIES, expecting_schema)
    table("rules on run_command: the shipped rules' verdict", COMMANDS, command_verdict, COMMAND_SIZES, MAX_COMMAND_CHARS)


if __name__ == "__main__":
    main()
