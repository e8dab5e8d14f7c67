"""Property tests: the two parser back ends (Lark's LALR parser, engine.lang.fastparse's driver
of the same table) build identical trees, positions included, on generated programs that use
every construct of the language, and reject the same texts."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lang.test_fastparse import both

NAMES = st.sampled_from(["a", "b2", "chunker", "run_x", "tool", "output", "if_", "x-y", "last", "model"])
VARS = NAMES.map(lambda n: "$" + n.replace("-", "_"))
STRINGS = st.sampled_from(['"hi"', '"a ${x} b"', "'raw'", '""', '"q\\"x"'])
NUMBERS = st.sampled_from(["0", "42", "3.5", "9" * 40])


COMPARISONS = ("==", "!=", "<", ">=", "~", "contains")


def exprs() -> st.SearchStrategy[str]:
    atom = st.one_of(VARS, NAMES, STRINGS, NUMBERS, st.sampled_from(["true", "false", "null", "initial user prompt"]))

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        op = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "~", "contains", "and", "or"])
        return st.one_of(
            # Comparisons do not chain (`a == b == c` is an error): a comparison's left side is
            # parenthesized, arithmetic and logic keep theirs bare to exercise precedence.
            st.tuples(inner, op, inner).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})" if t[1] in COMPARISONS
                                            else f"{t[0]} {t[1]} ({t[2]})"),
            inner.map(lambda e: f"not ({e})"), inner.map(lambda e: f"-({e})"),
            st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
            st.lists(st.tuples(NAMES, inner), max_size=2).map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
            st.tuples(NAMES, st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
            st.tuples(NAMES, NAMES, st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}.{t[1]}({', '.join(t[2])})"),
            st.tuples(VARS, NAMES).map(lambda t: f"{t[0]}.{t[1]}"),
            st.tuples(VARS, NAMES, inner).map(lambda t: f"filter {t[0]} where .{t[1]} > ({t[2]})"),
        )

    return st.recursive(atom, extend, max_leaves=6)


EXPRS = exprs()


def simple_statements() -> st.SearchStrategy[str]:
    e = EXPRS
    return st.one_of(
        st.tuples(VARS, e).map(lambda t: f"{t[0]} = {t[1]}"),
        st.tuples(VARS, NAMES, e).map(lambda t: f"{t[0]} = run agent {t[1]} with {t[2]}"),
        st.tuples(NAMES, e, e).map(lambda t: f"run agent {t[0]} {t[1]} {t[2]}, on escalate return {t[1]}"),
        st.tuples(NAMES).map(lambda t: f"run {t[0]}, on escalate abort"),
        st.tuples(VARS, NAMES).map(lambda t: f"{t[0]} = call llm {t[1]} using model \"m\""),
        st.tuples(VARS, e).map(lambda t: f"{t[0]} = escalate to human {t[1]}"),
        e.map(lambda x: f"return {x}"), e.map(lambda x: f"log {x}"), e.map(lambda x: f"notify {x}"),
        st.tuples(e, VARS).map(lambda t: f"push {t[0]} as user to {t[1]}"),
        st.sampled_from(["continue", "abort", 'fail "no"', "mask pii", "block if jailbreak", "warn if mcp_guard",
                         'warn "careful"', "retry step $x", 'retry with "again" if cognitive_drift']),
    )


SIMPLE = simple_statements()


@st.composite
def blocks(draw, depth: int = 0, indent: str = "    ") -> str:
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["simple", "simple", "if", "for", "loop", "parallel", "match", "failure"]
                                    if depth < 2 else ["simple"]))
        inner = indent + "    "
        if kind == "simple":
            lines.append(indent + draw(SIMPLE))
        elif kind == "if":
            lines.append(f"{indent}if {draw(EXPRS)}:\n{draw(blocks(depth + 1, inner))}")
            if draw(st.booleans()):
                lines.append(f"{indent}elif {draw(EXPRS)}: log 1")
            if draw(st.booleans()):
                lines.append(f"{indent}else:\n{draw(blocks(depth + 1, inner))}")
        elif kind == "for":
            lines.append(f"{indent}for {draw(VARS)} in {draw(EXPRS)} do\n{draw(blocks(depth + 1, inner))}\n{indent}end")
        elif kind == "loop":
            lines.append(f"{indent}loop max 3 do\n{draw(blocks(depth + 1, inner))}\n{indent}end")
        elif kind == "parallel":
            lines.append(f"{indent}parallel do\n{draw(blocks(depth + 1, inner))}\n{indent}end")
        elif kind == "match":
            lines.append(f'{indent}match {draw(EXPRS)}\n{inner}when "a" -> log 1\n{inner}when ~ "b" -> return 2\n'
                         f"{inner}else -> continue\n{indent}end")
        else:
            lines.append(f"{indent}log 1\n{indent}on failure:\n{draw(blocks(depth + 1, inner))}")
    return "\n".join(lines)


DEFINITIONS = st.sampled_from([
    "import ./lib.sr", "import a from ./lib.sr", "import streetrace", "import fs from streetrace",
    "import x from pip://pkg", "import mcp://server",
    "model m = anthropic/claude-sonnet", 'model m:\n    provider: openai\n    base_url: "http://127.0.0.1:1/v1"',
    "schema S:\n    a: string\n    b: list[S]?\n    c: int[]", "tool t = builtin streetrace.fs",
    'tool g = mcp "https://x.invalid/mcp" with auth bearer "${TOKEN}"', "retry r = 3 times, exponential backoff",
    "timeout t = 2 minutes", "policy p:\n    trigger: token_usage > 0.8\n    preserve: [$goal, last 3 messages, tool results]",
    'prompt p using model "m" expecting S[]: """Hi ${x} and $y.z"""\n    escalate if ~ "DRIFTING"',
    "prompt q expecting S", "prompt plain:\n    An indented body with $x\n    escalate if contains \"STOP\"",
    "agent chunker:\n    instruction p\n    use chunker\n    produces out\n    timeout 2 minutes\n    description \"d\"",
    "agent:\n    instruction p\n    delegate a, b\n    on output do\n        mask pii\n    end",
    "on tool-call do\n    block if mcp_guard\nend", "after output do\n    warn if cognitive_drift\nend",
])


@st.composite
def programs(draw) -> str:
    parts = ["streetrace v1"] if draw(st.booleans()) else []
    parts += draw(st.lists(DEFINITIONS, max_size=4))
    for i in range(draw(st.integers(0, 2))):
        parts.append(f"flow f{i} $p:\n{draw(blocks())}")
    return "\n".join(parts) + "\n"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_generated_programs_parse_identically(text):
    ref, fast = both(text)
    assert ref is not None, text  # the generator writes only valid programs
    assert fast == ref


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(), st.integers(0, 10_000), st.sampled_from(["", ":", " do", "\n    ", "(", "]", "$", '"', "end\n", "=", "~"]))
def test_broken_programs_are_rejected_by_both(text, where, junk):
    i = where % (len(text) + 1)
    broken = text[:i] + junk + text[i:]
    ref, fast = both(broken)
    assert fast == ref or fast is None  # the fast driver may give up; Lark then explains the error
    if ref is None:
        assert fast is None
