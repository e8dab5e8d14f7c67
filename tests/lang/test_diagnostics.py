"""Every diagnostic code, at the right position, with help where a close name exists."""

import json
from pathlib import Path

import pytest

from engine.lang.compiler import compile_file, compile_source
from engine.lang.diagnostics import CODES, render_json, render_text
from tests.lang.helpers import compile_text

P = 'prompt p: """x"""\n'
A = P + "agent a:\n    instruction p\n"

CASES = [
    ("E0001", A + "flow main:\n    run agent ab\n", 5, "did you mean 'a'?"),
    ("E0001", "agent a:\n    instruction pp\n" + P, 2, "did you mean 'p'?"),
    ("W0004", A + "on input do\n    block if jailbrake\nend\n", 5, "did you mean 'jailbreak'?"),
    ("E0002", A + "flow main:\n    if 1 == 1:\n        $x = 1\n    log $x\n", 7, None),
    ("E0002", A + "flow main:\n    return $inpt\n", 5, "did you mean '$input'?"),
    ("E0002", A + "on output do\n    push $nobody to $seen\nend\n", 5, None),  # as the origin: a value read
    ("E0003", A + "agent a:\n    instruction p\n", 4, None),
    ("E0004", A + 'flow main:\n    $x = "a" - 1\n', 5, None),
    ("E0004", A + 'flow main:\n    loop max "x" do\n        log 1\n    end\n', 5, None),
    ("E0004", A + 'flow main:\n    loop max -1 do\n        log 1\n    end\n', 5, None),
    ("E0005", A + "import fs from streetrace\n", 4, "builtin streetrace.fs"),
    ("E0005", A + "import helpers from pip://helpers\n", 4, None),
    ("E0005", A + "import tools from mcp://github\n", 4, None),
    ("E0007", "flow main:\n    $x = = 1\n", 2, "expected one of"),
    ("E0007", "prompt greeting\n    Hello\n", 1, "ends with ':'"),
    ("E0007", A + "flow main:\n    retrun 1\n", 5, "did you mean 'return'?"),
    ("E0008", "flow main:\n    $x = 1\n      $y = 2\n", 3, None),
    ("E0008", "flow main:\n        $x = 1\n    $y = 2\n", 3, None),
    ("E0008", "flow main:\nreturn 1\n", 2, "indent the lines"),
    ("E0008", "flow main:\n    if true:\n    # nothing under it\n    return 1\n", 4, "indent the lines"),
    ("E0009", A + "flow main:\n    mask pii\n", 5, None),
    ("E0009", A + "on input do\n    return 1\nend\n", 5, None),
    ("E0010", P + "agent a:\n    description \"x\"\n", 2, None),
    ("E0011", P + "agent a:\n    instruction p\n    use b\nagent b:\n    instruction p\n    delegate a\n", 2, None),
    ("E0011", P + "agent a:\n    instruction p\n    delegate a\n", 4, None),
    ("E0012", A + "flow main:\n    continue\n", 5, None),
    ("E0012", A + "flow main:\n    run agent a, on escalate continue\n", 5, None),
    ("E0013", "prompt p expecting X\nagent a:\n    instruction p\n", 1, None),
    ("E0014", 'model m = a/b\nmodel n = a/c\nprompt p using model "m"\nprompt p using model "n": """x"""\n', 4, None),
    ("E0015", 'prompt p: """Hi ${nobody}"""\n', 1, None),
    ("E0016", 'prompt p: """Hi ${output}"""\nagent a:\n    instruction p\n', 1, None),
    ("E0017", A.replace("instruction p", "instruction p\n    colour red"), 4, None),
    ("E0017", "tool shell = builtin streetrace.shell\n", 1, "streetrace.cli"),  # a check-time error, not a failed run
    ("E0017", "tool files:\n    type: builtin\n    name: streetrace.fss\n", 1, "did you mean 'streetrace.fs'?"),
    ("E0018", A + "flow main:\n    len(1) = 3\n", 5, None),
    ("E0019", 'prompt p: """${lib.secret()}"""\n', 1, None),
    ("E0022", "flow main:\n" + "".join(f"{'    ' * (i + 1)}for $v{i} in [1] do\n" for i in range(21))
     + "    " * 22 + "log 1\n" + "".join(f"{'    ' * (i + 1)}end\n" for i in reversed(range(21))), 22, "flow of its own"),
    ("E0022", "flow main:\n    return " + " + ".join(["1"] * 250) + "\n", 2, None),
    ("E0022", "flow main:\n    log 1\n    $x = " + "[" * 10_000 + "]" * 10_000 + "\n", 3, None),
    ("E0022", "flow main:\n    $x = " + "not " * 10_000 + "true\n", 2, None),
    ("W0005", "model m:\n    provider: openai\n", 1, "name: MODEL-ID"),
]


@pytest.mark.parametrize("code,src,line,help", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_code(code, src, line, help):
    r = compile_text(src)
    match = [d for d in r.diagnostics if d.code == code]
    assert match, r.diagnostics
    assert match[0].line == line, match[0]
    if help:
        assert help in (match[0].help or "")
    assert r.ok == code.startswith("W")  # a warning alone never fails a file


def test_warning_w0002_is_not_an_error():
    r = compile_text(A + "agent b:\n    instruction p\nagent c:\n    instruction p\n    delegate a\n    use b\n")
    assert [d.code for d in r.diagnostics] == ["W0002"] and r.ok


def test_imports_load_and_report_missing_and_cycles(tmp_path: Path):
    (tmp_path / "lib.sr").write_text(A)
    (tmp_path / "main.sr").write_text("import ./lib.sr\nflow main:\n    return run agent a\n")
    assert compile_file(tmp_path / "main.sr").ok
    (tmp_path / "one.sr").write_text("import p from ./lib.sr\nagent z:\n    instruction p\n")
    assert compile_file(tmp_path / "one.sr").ok
    # Importing an agent brings what it needs (its prompt), and nothing else.
    (tmp_path / "two.sr").write_text("import a from ./lib.sr\nflow main:\n    return run agent a\n")
    r = compile_file(tmp_path / "two.sr")
    assert r.ok, r.diagnostics
    from engine.lang.compiler import workflow_class
    assert set(workflow_class(r).PROMPTS) == {"p"}
    (tmp_path / "x.sr").write_text("import ./y.sr\n")
    (tmp_path / "y.sr").write_text("import ./x.sr\n")
    assert "E0006" in [d.code for d in compile_file(tmp_path / "x.sr").diagnostics]
    (tmp_path / "m.sr").write_text("import ./missing.sr\n")
    d = compile_file(tmp_path / "m.sr").diagnostics
    assert d[0].code == "E0005" and d[0].line == 1


def test_all_semantic_errors_reported_in_one_run():
    r = compile_text(A + "flow main:\n    run agent x\n    run agent y\n    continue\n    mask pii\n")
    assert [d.code for d in r.diagnostics] == ["E0001", "E0001", "E0012", "E0009"]


def test_unreadable_file_is_a_diagnostic(tmp_path: Path):
    assert compile_file(tmp_path / "nope.sr").diagnostics[0].code == "E0020"
    (tmp_path / "bin.sr").write_bytes(b"\xff\xfe\x00")
    assert compile_file(tmp_path / "bin.sr").diagnostics[0].code == "E0020"
    (tmp_path / "latin.sr").write_bytes(b'flow main:\n    log "caf\xe9"\n')
    [d] = compile_file(tmp_path / "latin.sr").diagnostics
    assert (d.code, d.line, d.column) == ("E0020", 2, 13)
    assert "directory" in compile_file(tmp_path).diagnostics[0].message


def test_render_text_and_json():
    r = compile_text(A + "flow main:\n    run agent ab\n")
    text = render_text(r.diagnostics, r.sources)
    first = text.splitlines()[0]
    assert first.endswith("error[E0001]: undefined agent 'ab'") and ":5:15:" in first  # the caret on the name
    assert "^" in text and "help: did you mean 'a'?" in text
    data = json.loads(render_json(r.diagnostics))
    assert {"file", "line", "column", "severity", "code", "message"} <= set(data[0])


def test_codes_table_is_complete():
    for code, *_ in CASES:
        assert code in CODES


def test_unknown_interpolation_syntax_points_into_string():
    r = compile_text('flow main:\n    log "a ${1 +} b"\n')
    assert r.diagnostics[0].code == "E0007" and r.diagnostics[0].line == 2


def test_prompts_include_other_prompts_and_cycles_are_reported():
    from tests.lang.helpers import FakeCtx, load
    cls = load('prompt rubric: """Score 0-100."""\nprompt a: """Review. ${rubric} / $rubric"""\n')
    assert cls.PROMPTS["a"].body(FakeCtx()) == "Review. Score 0-100. / Score 0-100."
    r = compile_text('prompt c1: """x $c2"""\nprompt c2: """y $c1"""\n')
    assert [d.code for d in r.diagnostics] == ["E0021", "E0021"]


def test_variables_are_flat_per_run_for_the_analyzer_too():
    """A flow may read what a flow that runs it (directly or not) or an `on start` handler
    assigns; a variable nobody assigns before is E0002, and so is one nobody assigns at all."""
    ok = (A + "on start do\n    $greeting = \"hi\"\nend\n"
          "flow leaf:\n    return [$greeting, $shared, $deep, $found]\n"
          "flow middle:\n    $deep = 2\n    return run leaf\n"
          "flow main:\n    $shared = 1\n    $found = run agent a\n    run middle\n    return $deep\n")
    assert compile_text(ok).diagnostics == []
    lonely = A + "flow other:\n    $x = 1\nflow main:\n    log $x\n"
    assert [(d.code, d.line) for d in compile_text(lonely).diagnostics] == [("E0002", 7)]
