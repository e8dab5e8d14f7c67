"""The fast LALR driver builds exactly the trees (and positions) Lark builds."""

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from engine.lang.fastparse import TABLE_PATH, FastParser, build_tables, grammar_sha, load_tables
from engine.lang.lark_backend import lark_parser
from engine.lang.parser import extract_plain_bodies
from tests.lang.test_safety import SEEDS, mutated

EXAMPLES = Path(__file__).resolve().parents[2] / "engine" / "examples"
CORPUS = Path("/tmp/origin-sr")


def shape(node):
    """Tree data, children, token types/values and every position."""
    if isinstance(node, str):  # a token (Lark's or ours)
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
        fast = shape(FastParser(load_tables()).parse(pre))
    except Exception:
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
            fast = shape(FastParser(load_tables(), "expr").parse(src))
        except Exception:
            fast = None
        assert fast == ref


def test_lone_names_in_interpolations_get_lark_trees():
    # parse_expression builds `${name}` / `${$var}` trees itself: they must be Lark's.
    from engine.lang.parser import parse_expression

    for src in ["input_prompt", "$current", "x_1", "_y", "true", "null", "not", "tool", "last", "a-b", "$x.y"]:
        ref = shape(lark_parser().parse(src, start="expr")) if src != "not" else None
        try:
            fast = shape(parse_expression(src, "t.sr", 1, 1))
        except Exception:
            fast = None
        assert fast == ref, src


def test_shipped_table_matches_the_grammar():
    """parse_table.json is Lark's analysis of grammar.lark (refresh: python -m engine.lang.fastparse)."""
    import json

    shipped = json.loads(TABLE_PATH.read_text())
    assert shipped["grammar_sha256"] == grammar_sha()
    assert shipped == json.loads(json.dumps(build_tables(lark_parser())))


def test_valid_programs_parse_without_importing_lark(tmp_path):
    import subprocess
    import sys

    (tmp_path / "a.sr").write_text(SEEDS[0])
    code = ("import sys\nfrom engine.lang.compiler import compile_file\n"
            f"r = compile_file({str(tmp_path / 'a.sr')!r})\n"
            "print(r.ok, any(m == 'lark' or m.startswith('lark.') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "True False"
