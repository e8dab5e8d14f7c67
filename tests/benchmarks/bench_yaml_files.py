"""Hostile YAML files (issue 15): outcomes per class of input, and the limits' costs.

Feeds every class of hostile input to the three loaders (rules, script, answers) and counts
outcomes: `positioned` (the loader's own FILE:LINE:COL error), `error` (its own error without
a position: unreadable files), `accepted`, `crash` (any other exception) and `hang` (over
HANG_SECONDS). Then times the limits: a maximal valid file, a bomb's refusal, rule regexes on
long text. Prints figures; asserts nothing. Runs against whichever code is on PYTHONPATH, so
the same script measures a commit before the fix (crashes there are expected).

Run: PYTHONPATH=. python tests/benchmarks/bench_yaml_files.py
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable

from engine.escalation.answers import load_answers, parse_answers
from engine.runtime.script import load_script, parse_script
from rules import load_rules, parse_rules
from rules.yamlnodes import YamlError

HANG_SECONDS = 10
MEMORY_LIMIT = 3 << 30  # an unbounded read (/dev/zero) is a MemoryError here, not a swapped host

PARSERS: dict[str, Callable[[str, str], Any]] = {"rules": parse_rules, "script": parse_script, "answers": parse_answers}
LOADERS: dict[str, Callable[[Path], Any]] = {"rules": load_rules, "script": load_script, "answers": load_answers}
SLOTS = {
    "rules": "escalationRules:\n  global:\n    - {pattern: {V}, action: deny}\n",
    "script": "agents:\n  a:\n    - {tool: t, args: {k: {V}}}\n",
    "answers": "- responseType: text\n  textResponse: {V}\n",
}


class Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hang


def outcome(call: Callable[[], Any]) -> str:
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    try:
        call()
        return "accepted"
    except Hang:
        return "hang"
    except YamlError as exc:
        return "positioned" if exc.line else "error"
    except Exception as exc:  # noqa: BLE001 - counting what escapes is the point
        return f"crash {type(exc).__name__}"
    finally:
        signal.alarm(0)


def laughs(levels: int, width: int = 10) -> str:
    parts = ["&l0 [" + ", ".join(["lol"] * width) + "]"]
    parts += [f"&l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]" for n in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def slot_inputs() -> dict[str, list[tuple[str, str]]]:
    """class -> [(kind, file text)], each value in each file kind's slot."""
    controls = [chr(c) for c in range(32) if c not in (9, 10, 13)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)
                                                                          if c != 0x85] + ["\ufffe", "\uffff"]
    tags = ['!!int "abc"', '!!int ""', '!!float "."', '!!float "1e"', "!!bool maybe", '!!timestamp "2020-99-99"',
            "!!timestamp 2020-01-01", "!foo bar", "!!binary aGk=", "!!set {a: null}", "!!omap [{a: 1}]",
            "!!pairs [{a: 1}]", "!!python/object/apply:os.system [true]", "!!python/name:os.system ''",
            "!!python/object/new:os.system [true]", "!!python/module:os ''", "!<tag:yaml.org,2002:python/object:os.X> {}",
            "!!str [1]", "!!seq {a: 1}", "!!map x", "!e!int 1", "!!merge x", "!!yaml x", "!!value x"]
    numbers = ["9" * n for n in (309, 400, 1000, 4300, 4301, 10_000, 100_000)] + \
        ["1" + ":59" * 2000, "0x" + "f" * 500, "0b" + "1" * 2000, "1e400", "-1e400", "1" + "0" * 5000 + ".5"]
    aliases = [laughs(n) for n in (6, 7, 8, 9, 10)] + [laughs(4, 40), laughs(3, 120)] + \
        ["&a [*a]", "&a {k: *a}", "&a [x, [y, *a]]", "&a {k: [{j: *a}]}", "*undefined", "[&a x, &a y]"]
    surrogates = [r'"\ud800"', r'"\udfff"', r'"x\ud83d\ude00"', r'"\uDBFF\uDC00"', r'"\U0000D800"', r'"\U99999999"',
                  r'"\UFFFFFFFF"', r'"\U00110000"']
    nesting = ["[" * n + "]" * n for n in (101, 1000, 5000, 50_000)] + ["{a: " * 200 + "1" + "}" * 200]
    classes = {"control characters": [f'"a{c}b"' for c in controls] + [f"a{c}b" for c in controls],
               "tags": tags, "numbers": numbers, "aliases": aliases, "surrogates and escapes": surrogates,
               "nesting": nesting}
    return {name: [(kind, SLOTS[kind].replace("{V}", value)) for value in values for kind in SLOTS]
            for name, values in classes.items()}


def number_fields() -> list[tuple[str, str]]:
    """Huge and out-of-range numbers where numbers are expected."""
    values = ["9" * 309, "9" * 4301, "1e300", "1e400", "1e9", "-1", "101", ".inf", ".nan"]
    fields = [("rules", "escalationRules:\n  defaults:\n    test_failure: {timeout: {V}, onTimeout: stop}\n"),
              ("rules", "escalationRules:\n  global:\n    - {pattern: x, action: ask_user, timeout: {V}}\n"),
              ("rules", "policy:\n  maxDepth: {V}\n"), ("rules", "policy:\n  loopWindow: {V}\n"),
              ("script", "agents:\n  a:\n    - escalate: {question: q, timeout: {V}}\n")]
    return [(kind, text.replace("{V}", v)) for kind, text in fields for v in values]


def regex_inputs() -> list[tuple[str, str]]:
    patterns = [r"re:(a)\1", "re:a(?=b)", "re:a(?!b)", "re:(?<=a)b", "re:(?<!a)b", "re:(?P<n>a)(?P=n)", "re:a*+",
                "re:(?>a)", r"re:\Z", "re:a{1001}", "re:(x{1000}){1000}", "re:(", "re:[a", "re:" + "(" * 1001 + ")" * 1001]
    return [("rules", SLOTS["rules"].replace("{V}", "'" + p.replace("'", "''") + "'")) for p in patterns]


def file_inputs(tmp: Path) -> list[tuple[str, Path]]:
    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    big = tmp / "big.yaml"
    big.write_bytes(b"# " + b"x" * (5 << 20) + b"\n")
    sock = tmp / "sock.yaml"
    socket.socket(socket.AF_UNIX).bind(str(sock))
    paths = [fifo, Path("/dev/zero"), Path("/dev/null"), Path("/dev/urandom"), sock, tmp, big, tmp / "missing.yaml",
             Path("/proc/self/mem")]
    return [(kind, path) for path in paths for kind in LOADERS]


def report(name: str, results: Counter) -> None:
    total = sum(results.values())
    shown = ", ".join(f"{key} {n}" for key, n in sorted(results.items()))
    print(f"  {name:<24} {total:>4} inputs: {shown}")


def audit() -> None:
    print("outcomes per class (positioned = FILE:LINE:COL error; crash/hang = defects)")
    for name, inputs in slot_inputs().items():
        report(name, Counter(outcome(lambda k=kind, t=text: PARSERS[k](t, "F.yaml")) for kind, text in inputs))
    report("numbers where expected", Counter(outcome(lambda k=k, t=t: PARSERS[k](t, "F.yaml")) for k, t in number_fields()))
    report("rule regexes", Counter(outcome(lambda t=t: parse_rules(t, "R.yaml")) for _, t in regex_inputs()))
    with tempfile.TemporaryDirectory() as tmp:
        report("files that are not files", Counter(outcome(lambda k=k, p=p: LOADERS[k](p)) for k, p in file_inputs(Path(tmp))))


def timed(label: str, call: Callable[[], Any], repeat: int = 3) -> None:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = outcome(call)
        times.append(time.perf_counter() - start)
    print(f"  {label:<58} {min(times) * 1000:9.1f} ms  ({result})")


def costs() -> None:
    print("costs (best of 3)")
    replies = "".join(f'    - "reply number {i} with some text"\n' for i in range(100_000))
    timed(f"valid script of {len(replies) / 2**20:.1f} MiB (100,000 replies)", lambda: parse_script("agents:\n  a:\n" + replies, "S.yaml"))
    timed("billion laughs (10**9 values) refused", lambda: parse_script(SLOTS["script"].replace("{V}", laughs(9)), "S.yaml"))
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.yaml"
        big.write_bytes(b"#" * (64 << 20))
        timed("a 64 MiB file refused (reads 4 MiB + 1 byte)", lambda: load_script(big))
    rules = parse_rules("escalationRules:\n  global:\n" + "".join(
        f"    - {{pattern: '{p}', action: deny}}\n" for p in ("re:(a+)+$", "re:(a|aa)*c", "re:(x+x+)+y", "re:rm\\s+-rf")),
        "R.yaml")
    for size in (10_000, 1 << 20, 4 << 20):
        text = "a" * size + "!"
        timed(f"4 regex rules over a {size:,}-character argument", lambda t=text: rules.match_tool("t", "write_file",
                                                                                               {"content": t}))


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    start = time.perf_counter()
    audit()
    costs()
    print(f"total {time.perf_counter() - start:.1f} s; load average {os.getloadavg()[0]:.2f}")
