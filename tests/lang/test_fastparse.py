"""The fast LALR driver builds exactly the trees (and positions) Lark builds."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from lark import Token, Tree

from engine.lang.fastparse import FastFail, FastParser
from engine.lang.parser import extract_plain_bodies, lark_parser
from tests.lang.test_safety import SEEDS, mutated

EXAMPLES = Path(__file__).resolve().parents[2] / "engine" / "examples"
CORPUS = Path("/tmp/origin-sr")


def shape(node):
    """Tree data, children, token types/values and every position."""
    if isinstance(node, Token):
        return (node.type, str(node), node.line, node.column)
    meta = node.meta
    pos = None if meta.empty else (meta.line, meta.column)
    return (node.data, pos, [shape(c) for c in node.children])


def both(text: str):
    if not text.endswith("\n"):
        text += "\n"
    pre = extract_plain_bodies(text).text
    try:
        ref = shape(lark_parser().parse(pre, start="start"))
    except Exception:
        ref = None
    try:
        fast = shape(FastParser(lark_parser()).parse(pre))
    except (FastFail, Exception):
        fast = None
    return ref, fast


def test_examples_corpus_and_a_big_file_parse_identically():
    texts = SEEDS + ([p.read_text() for p in sorted(CORPUS.glob("*.sr"))] if CORPUS.is_dir() else [])
    texts.append('streetrace v1\nmodel m:\n    provider: openai\n    name: gpt-4.1\nschema S:\n    a: S[]?\n'
                 'import ./x.sr\npolicy p:\n    preserve: [last 2 messages, tool results]\n'
                 'flow f:\n    $x = [] \n    $y = {a: [1, 2],\n        b: 3}\n    match $x\n        when "a" -> log 1\n    end\n')
    parsed = 0
    for t in texts:
        ref, fast = both(t)
        assert fast == ref
        parsed += ref is not None
    assert parsed >= len(texts) - 1  # only the corpus's invalid_syntax.sr fails


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_fuzzed_programs_agree(text):
    ref, fast = both(text)
    assert fast == ref or fast is None  # the driver may give up; then Lark reports the error
    if ref is None:
        assert fast is None


def test_expressions_parse_identically():
    for src in ["$a.b + len($c) * -2 >= 3 and not x", "filter $x where .a.b ~ \"y\" or .c contains 1",
                "{a: [1, 2.5, null], \"b\": initial user prompt}", "lib.f(1)(2)" , "($a)"]:
        try:
            ref = shape(lark_parser().parse(src, start="expr"))
        except Exception:
            ref = None
        try:
            fast = shape(FastParser(lark_parser(), "expr").parse(src))
        except Exception:
            fast = None
        assert fast == ref
