"""Hostile text in every string position never executes; fuzzed programs never crash the compiler."""

import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from engine.lang.compiler import compile_source, workflow_class
from engine.lang.diagnostics import Diagnostic
from tests.lang.helpers import FakeCtx

EXAMPLES = Path(__file__).resolve().parents[2] / "engine" / "examples"

HOSTILE = [
    "'''); import os; os.system('touch /tmp/pwned'); ('''",
    '""" + __import__("os").system("touch /tmp/pwned") + """',
    "\\'); __import__('os').system('touch /tmp/pwned') #",
    "x\r__import__('os').system('touch /tmp/pwned')",
    "{__import__('os')}",
    "\u2028__import__('os').system('touch /tmp/pwned')",
]


def program(h: str) -> str:
    q = h.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return (
        f'model main = anthropic/claude\n'
        f'prompt p using model "main": """{h.replace(chr(34) * 3, "")}"""\n'
        f'    escalate if ~ "{q}"\n'
        f'prompt q:\n    {h.replace(chr(13), " ").replace(chr(0x2028), " ")}\n'
        f'agent a:\n    instruction p\n    description "{q}"\n'
        f'tool t = mcp "{q}" with auth bearer "{q}"\n'
        f'flow main:\n    log "{q}"\n    $o = {{ k: "{q}", "{q}": 1 }}\n'
        f'    match $o.k\n        when "{q}" -> return "{q}"\n    end\n    fail "{q}"\n'
    )


async def test_hostile_strings_stay_literals(tmp_path: Path):
    marker = Path("/tmp/pwned")
    marker.unlink(missing_ok=True)
    for h in HOSTILE:
        r = compile_source(program(h), tmp_path / "evil.sr")
        assert r.ok, (h, r.diagnostics)
        cls = workflow_class(r)
        ctx = FakeCtx()
        assert cls.PROMPTS["p"].body(ctx) == h.replace('"""', "")
        assert cls.AGENTS["a"].description == h
        assert cls.PROMPTS["p"].escalation.value == h
        try:
            await getattr(cls(), cls.FLOWS["main"])(ctx, [])
        except Exception as exc:  # `fail` ends the flow: its message is the hostile text, verbatim
            assert str(exc) == h
        assert ctx.logs == [h]
    assert not marker.exists()


def test_hostile_names_and_file_names(tmp_path: Path):
    r = compile_source('flow main:\n    return 1\n', tmp_path / "x'); import os #\n.sr")
    assert r.ok and "import os" not in r.python.split("\n", 1)[1].split("class")[0]
    compile(r.python, "x", "exec")


SEEDS = [p.read_text() for p in sorted(EXAMPLES.glob("*.sr"))]
FRAGMENTS = ["", "\n", "    ", "\t", ":", "do", "end", "$", "${", "}", '"', '"""', "(", ")", "[", "]", "{", ",", "~",
             "run agent", "on escalate continue", "if", "else:", "elif x:", "loop max", "->", "when", "#", "\x00", "\r",
             "prompt z:\n    body\n", "import ./nope.sr\n", "filter", ".", "=", "agent", "flow f:\n"]


@st.composite
def mutated(draw):
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 12)))
        text = text[:i] + draw(st.sampled_from(FRAGMENTS) | st.text(max_size=4)) + text[j:]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_fuzz_compiler_only_reports_diagnostics(text):
    r = compile_source(text, Path("/tmp/escalate-fuzz/f.sr"))
    assert all(isinstance(d, Diagnostic) for d in r.diagnostics)
    assert not any("internal compiler error" in d.message for d in r.diagnostics), r.diagnostics
    assert r.ok == (r.python is not None)
    if r.ok:
        compile(r.python, "f", "exec")
    else:
        assert r.diagnostics and all(d.line >= 1 and d.column >= 1 for d in r.diagnostics)


def test_fuzz_cli_never_prints_a_traceback(tmp_path: Path):
    import random
    rnd = random.Random(7)
    for k in range(12):
        text = rnd.choice(SEEDS)
        for _ in range(3):
            i = rnd.randrange(len(text))
            text = text[:i] + rnd.choice(FRAGMENTS) + text[i + rnd.randrange(8):]
        (tmp_path / f"m{k}.sr").write_text(text)
    r = subprocess.run([sys.executable, "-m", "engine", "check", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1) and "Traceback" not in r.stdout + r.stderr
