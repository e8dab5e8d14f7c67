"""The real `escalate` command on hostile YAML files: the contract's exit codes and one line.

`escalate rules check`: 1 for an invalid file, 2 for an unreadable one. `escalate run`: 2 for
any bad --rules, --script or --answers file. Always `FILE:LINE:COL: message` (or `FILE:
message` without a position), on one line of stderr, nothing on stdout, no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
WORKFLOW = DATA / "decide.sr"

pytestmark = pytest.mark.timeout(180)  # a hang guard: its processes start slowly on a loaded host


def escalate(cwd: Path, *argv: str) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "-m", "engine", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=30)
    return proc.returncode, proc.stdout, proc.stderr


def one_line(err: str) -> str:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def laughs() -> str:
    levels = ["&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"&l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]" for n in range(1, 9)]
    return "[" + ", ".join(levels) + "]"


RULES = "escalationRules:\n  global:\n    - pattern: {V}\n      action: deny\n"
SCRIPT = "agents:\n  architect:\n    - tool: t\n      args: {k: {V}}\n"
ANSWERS = "- responseType: text\n  textResponse: {V}\n"

# (class, option, template, value, expected start of the message after the file name)
CASES = [
    ("control", "--rules", RULES, '"a\x1bb"', "3:18: unprintable character U+001B"),
    ("control", "--script", SCRIPT, "\"\x00\"", "4:18: unprintable character U+0000"),
    ("control", "--answers", ANSWERS, "x\x07", "2:18: unprintable character U+0007"),
    ("tag", "--rules", RULES, '!!int "abc"', "3:16: 'abc' is not a valid !!int"),
    ("tag", "--script", SCRIPT, "!!python/object/apply:os.system [touch PWNED]", "4:17: tag !!python/object/apply"),
    ("tag", "--answers", ANSWERS, '!!timestamp "2020-99-99"', "2:17: tag !!timestamp is not supported"),
    ("number", "--rules", "policy:\n  maxDepth: {V}\n", "9" * 400, "2:13: number too long: 400 characters"),
    ("number", "--rules", "policy:\n  loopWindow: {V}\n", "1e300", "2:15: policy.loopWindow must be at most"),
    ("number", "--script", "agents:\n  architect:\n    - escalate: {question: q, timeout: {V}}\n", "1" + "0" * 4300,
     "3:40: number too long: 4,301 characters"),
    ("alias", "--script", SCRIPT, laughs(), f"4:{17 + laughs().index('&l5 [') + 5 + 7 * 5}: more than 1,000,000 values"),
    ("alias", "--rules", RULES, "&a [*a]", "3:20: alias *a is inside the node it names"),
    ("surrogate", "--answers", ANSWERS, r'"\ud800"', "2:17: the escape \\ud800 is half of a UTF-16 surrogate pair"),
    ("regex", "--rules", RULES, r"'re:(a)\1'", "3:23: global rule 1: bad regular expression: invalid escape sequence"),
]


@pytest.mark.parametrize(("option", "template", "value", "expected"), [c[1:] for c in CASES],
                         ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_a_hostile_file_is_exit_2_for_run_and_one_line(option: str, template: str, value: str, expected: str,
                                                        tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(template.replace("{V}", value), encoding="utf-8")
    code, out, err = escalate(tmp_path, "run", str(WORKFLOW), option, str(bad))
    assert (code, out) == (2, ""), err
    assert one_line(err).startswith(f"{bad}:{expected}"), err
    assert not (tmp_path / "PWNED").exists()
    if option == "--rules":  # the same file through `rules check`: invalid, exit 1
        code, out, err = escalate(tmp_path, "rules", "check", str(bad))
        assert (code, out) == (1, "") and one_line(err).startswith(f"{bad}:{expected}"), err


def _fifo(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "pipe.yaml")
    return tmp_path / "pipe.yaml"


def _big(tmp_path: Path) -> Path:
    (tmp_path / "big.yaml").write_bytes(b"#" * (5 << 20))
    return tmp_path / "big.yaml"


@pytest.mark.parametrize("option", ["--rules", "--script", "--answers"])
@pytest.mark.parametrize(("make", "why"), [
    (_fifo, "not a regular file (it is a named pipe)"),
    (lambda _: Path("/dev/zero"), "not a regular file (it is a device)"),
    (_big, "larger than 4 MiB, the limit"),
], ids=["fifo", "dev-zero", "big"])
def test_what_is_not_a_file_is_exit_2_at_once(option: str, make, why: str, tmp_path: Path) -> None:
    path = make(tmp_path)
    code, out, err = escalate(tmp_path, "run", str(WORKFLOW), option, str(path))
    assert (code, out) == (2, "") and one_line(err) == f"{path}: cannot read file: {why}", err
    if option == "--rules":  # unreadable: exit 2
        code, out, err = escalate(tmp_path, "rules", "check", str(path))
        assert (code, out) == (2, "") and one_line(err) == f"{path}: cannot read file: {why}", err


def test_a_catastrophic_rule_regex_does_not_stall_a_run(tmp_path: Path) -> None:
    (tmp_path / "w.sr").write_text('tool fs = builtin streetrace.fs\nprompt p: """x"""\nagent a:\n    instruction p\n'
                                   '    tools fs\nflow main:\n    return run agent a "go"\n')
    (tmp_path / "s.yaml").write_text('agents:\n  a:\n    - {tool: write_file, args: {path: out.txt, content: "'
                                     + "a" * 100_000 + '!"}}\n    - "written"\n')
    (tmp_path / "r.yaml").write_text("escalationRules:\n  global:\n    - {pattern: 're:(a+)+$', action: deny}\n")
    code, out, err = escalate(tmp_path, "run", str(tmp_path / "w.sr"), "--script", str(tmp_path / "s.yaml"),
                              "--rules", str(tmp_path / "r.yaml"), "--workspace", str(tmp_path))
    assert (code, out) == (0, "written\n"), err
    assert (tmp_path / "out.txt").read_text().endswith("a!")
