"""Hostile YAML in all three user files (rules, script, answers): one positioned error each.

Every case puts a hostile value at a known spot of an otherwise valid file of each kind, and
expects that loader's own error (FILE:LINE:COL: message) at exactly that spot: never a
traceback, a hang, a constructed Python object, or a value that fails later at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from engine.escalation.answers import parse_answers
from engine.runtime.script import parse_script
from rules import parse_rules
from rules.yamlnodes import YamlError

# Each file kind: its parser and a valid file with a slot `{V}` for one value (line 3, col 16).
KINDS: dict[str, tuple[Callable[[str, str], Any], str]] = {
    "rules": (parse_rules, "escalationRules:\n  global:\n    - {pattern: {V}, action: deny}\n"),
    "script": (parse_script, "agents:\n  a:\n    - {tool: t, args: {k: {V}}}\n"),
    "answers": (parse_answers, "# one answer\n- responseType: text\n  textResponse: {V}\n"),
}
_DEPTH = {"rules": 4, "script": 5, "answers": 2}  # collections around the slot
_SLOT = {kind: text.splitlines()[2].index("{V}") + 1 for kind, (_, text) in KINDS.items()}


def load(kind: str, value: str) -> Any:
    parse, template = KINDS[kind]
    return parse(template.replace("{V}", value), "F.yaml")


def load_text(kind: str, value: str) -> str:
    """The slot's line of the file `load(kind, value)` reads."""
    return KINDS[kind][1].replace("{V}", value).splitlines()[2]


def refused(kind: str, value: str, fragment: str, *, column_offset: int | None = 0) -> YamlError:
    """The error loading `value` in the slot; at `column_offset` into the value unless None."""
    with pytest.raises(YamlError) as info:
        load(kind, value)
    err = info.value
    assert fragment in err.message, str(err)
    assert err.line == 3, str(err)
    if column_offset is not None:
        assert err.column == _SLOT[kind] + column_offset, str(err)
    assert str(err).startswith(f"F.yaml:{err.line}:{err.column}: ") and "\n" not in str(err)
    return err


def test_the_templates_are_valid() -> None:
    assert load("rules", "'fine'").global_rules[0].pattern.source == "fine"
    assert load("script", "v").agents["a"][0].args == {"k": "v"}
    assert load("answers", "'fine'")[0].response.text_response == "fine"


KIND_IDS = list(KINDS)


# -- 1. control characters -----------------------------------------------------------------


@pytest.mark.parametrize("kind", KIND_IDS)
@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x07", "\x7f", "\x08", "\x9b", "\ufffe"])
def test_control_characters_are_refused_where_they_are(kind: str, char: str) -> None:
    err = refused(kind, f'"ab{char}c"', f"unprintable character U+{ord(char):04X}", column_offset=3)
    assert "escape" in err.message


@pytest.mark.parametrize("kind", KIND_IDS)
def test_a_control_character_in_a_comment_is_refused_too(kind: str) -> None:
    parse, template = KINDS[kind]
    with pytest.raises(YamlError) as info:
        parse("# fine\n#  \x1b]52;c;aGk=\x07\n" + template.replace("{V}", "'x'"), "F.yaml")
    assert (info.value.line, info.value.column) == (2, 4)


def test_errors_quoting_the_file_show_its_control_characters_as_signs() -> None:
    osc52 = "\x1b]52;c;aGk=\x07"
    cases = [
        (parse_rules, 'escalationRules:\n  taskOverrides:\n    "\\e]52;c;aGk=\\a": {alwaysAsk: maybe}\n'),
        (parse_rules, 'escalationRules:\n  global:\n    - {pattern: "re:(\\e]52;c;aGk=\\a", action: deny}\n'),
        (parse_script, 'agents:\n  "\\e]52;c;aGk=\\a": hello\n'),
    ]
    for parse, text in cases:
        with pytest.raises(YamlError) as info:
            parse(text, osc52 + ".yaml")
        shown = str(info.value)
        assert "\x1b" not in shown and "\x07" not in shown, shown
        assert "␛]52;c;aGk=␇" in shown, shown  # the one sanitizer's signs (engine/text_safety.py)


def test_escaped_control_characters_are_fine() -> None:
    assert load("script", r'"a\x1bb\0"').agents["a"][0].args == {"k": "a\x1bb\0"}


# -- 2. tags --------------------------------------------------------------------------------

BAD_TAGS = [
    ('!!int "abc"', "'abc' is not a valid !!int"),
    ('!!int ""', "'' is not a valid !!int"),
    ('!!float "."', "'.' is not a valid !!float"),
    ("!!bool maybe", "'maybe' is not a valid !!bool"),
    ("!!null x", "'x' is not a valid !!null"),
    ('!!timestamp "2020-99-99"', "tag !!timestamp is not supported"),
    ("!!timestamp 2020-01-01", "tag !!timestamp is not supported"),
    ("!foo bar", "tag !foo is not supported"),
    ("!!binary aGk=", "tag !!binary is not supported"),
    ("!!set {a: null}", "tag !!set is not supported"),
    ("!!omap [{a: 1}]", "tag !!omap is not supported"),
    ("!!python/object/apply:os.system [touch PWNED]", "tag !!python/object/apply:os.system is not supported"),
    ("!!python/name:os.system ''", "tag !!python/name:os.system is not supported"),
    ("!<tag:yaml.org,2002:python/object/new:os.system> {args: [touch PWNED]}", "is not supported"),
    ("!!str [1]", "tag !!str does not go on a list"),
    ("!!seq {a: 1}", "tag !!seq does not go on a mapping"),
    ("!!map x", "tag !!map does not go on a single value"),
]


@pytest.mark.parametrize("kind", KIND_IDS)
@pytest.mark.parametrize(("value", "fragment"), BAD_TAGS, ids=[v for v, _ in BAD_TAGS])
def test_tags_are_refused_and_nothing_is_constructed(kind: str, value: str, fragment: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    refused(kind, value, fragment)
    assert not (tmp_path / "PWNED").exists()


def test_core_tags_on_fitting_values_mean_what_they_say() -> None:
    args = load("script", "{s: !!str 123, i: !!int 7, f: !!float 1.5, b: !!bool yes, n: !!null ~}").agents["a"][0].args["k"]
    assert args == {"s": "123", "i": 7, "f": 1.5, "b": True, "n": None}
    assert load("rules", "!!str re:x").global_rules[0].pattern.source == "re:x"


def test_timestamps_merge_keys_and_exponents_are_plain_yaml_1_2() -> None:
    args = load("script", "{d: 2020-01-01, t: 2020-99-99, <<: {a: 1}, e: 1e9, g: -2.5E-3, h: 0x1f}").agents["a"][0].args["k"]
    assert args == {"d": "2020-01-01", "t": "2020-99-99", "<<": {"a": 1}, "e": 1e9, "g": -0.0025, "h": 31}


# -- 3. numbers -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["rules", "script"])
@pytest.mark.parametrize("digits", [309, 400, 4301, 5000, 100_000])
def test_absurdly_long_numbers_are_refused(kind: str, digits: int) -> None:
    value = "9" * digits if kind == "script" else "9" * digits  # a number where a string is due: same error
    refused(kind, value, f"number too long: {digits:,} characters (at most 100)")


def test_a_long_base_60_integer_is_refused_before_it_is_converted() -> None:
    refused("script", "1" + ":59" * 200_000, "number too long")  # quadratic to convert


RULES_NUMBERS = "escalationRules:\n  defaults:\n    test_failure: {timeout: {T}, onTimeout: stop}\n" \
    "policy:\n  maxDepth: {D}\n  loopWindow: {W}\n"


@pytest.mark.parametrize(
    ("t", "d", "w", "line", "column", "fragment"),
    [
        ("9" * 309, "3", "300", 3, 29, "number too long: 309 characters"),
        ("1" + "0" * 4300, "3", "300", 3, 29, "number too long: 4,301 characters"),
        ("1e300", "3", "300", 3, 29, "defaults.test_failure.timeout must be at most 31536000, not 1e+300"),
        ("1e400", "3", "300", 3, 29, "must be a finite number"),
        ("300", "9" * 400, "300", 5, 13, "number too long"),
        ("300", "101", "300", 5, 13, "policy.maxDepth must be at most 100, not 101"),
        ("300", "1e1", "300", 5, 13, "policy.maxDepth must be a whole number, not the number 1e1"),
        ("300", "3", "9" * 5000, 6, 15, "number too long: 5,000 characters"),
        ("300", "3", "1e9", 6, 15, "policy.loopWindow must be at most 31536000, not 1000000000"),
        ("300", "3", "-1e3", 6, 15, "policy.loopWindow must be at least 0, not -1000"),
    ],
)
def test_rules_numbers_are_range_checked(t: str, d: str, w: str, line: int, column: int, fragment: str) -> None:
    with pytest.raises(YamlError) as info:
        parse_rules(RULES_NUMBERS.replace("{T}", t).replace("{D}", d).replace("{W}", w), "R.yaml")
    assert fragment in info.value.message and (info.value.line, info.value.column) == (line, column), str(info.value)


def test_rule_timeouts_are_range_checked() -> None:
    with pytest.raises(YamlError, match=r"^R.yaml:3:47: global rule 1: timeout must be at most 31536000"):
        parse_rules("escalationRules:\n  global:\n    - {pattern: x, action: ask_user, timeout: 1e12}\n", "R.yaml")


def test_exponent_numbers_are_numbers_where_numbers_are_expected() -> None:
    rules = parse_rules(RULES_NUMBERS.replace("{T}", "1e3").replace("{D}", "3").replace("{W}", "1.5E2"), "R.yaml")
    assert rules.policy.loop_window == 150.0
    assert [d.timeout for d in rules.defaults.values()] == [1000.0]
    script = parse_script("agents:\n  a:\n    - escalate: {question: q, timeout: 2e2}\n", "S.yaml")
    assert script.agents["a"][0].escalation["timeout"] == 200.0


@pytest.mark.parametrize(("value", "fragment"), [
    ("9" * 400, "number too long"), ("1e300", "escalate.timeout must be at most 31536000, not 1e+300"),
    (".inf", "must be a finite number"), ("4e7", "must be at most 31536000, not 40000000"),
])
def test_script_escalation_timeouts_are_range_checked(value: str, fragment: str) -> None:
    with pytest.raises(YamlError) as info:
        parse_script("agents:\n  a:\n    - escalate: {question: q, timeout: " + value + "}\n", "S.yaml")
    assert fragment in info.value.message and (info.value.line, info.value.column) == (3, 40), str(info.value)


# -- 4. aliases, nesting, surrogates -------------------------------------------------------------


def laughs(levels: int, width: int = 10) -> str:
    """The billion laughs as one flow value: level n is `width` aliases of level n - 1."""
    parts = ["&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, levels):
        parts.append(f"&l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]")
    return "[" + ", ".join(parts) + "]"


@pytest.mark.timeout(20)
@pytest.mark.parametrize("kind", KIND_IDS)
def test_an_alias_bomb_is_refused_at_the_alias_that_crosses_the_limit(kind: str) -> None:
    value = laughs(9)  # 10**9 values expanded
    err = refused(kind, value, "more than 1,000,000 values", column_offset=None)
    # level 5 holds 1,111,111 values: its 8th alias of level 4 is the one that crosses 1,000,000
    assert err.column == _SLOT[kind] + value.index("&l5") + len("&l5 [") + 7 * len("*l4, ")
    assert "alias" in err.message


@pytest.mark.timeout(20)
def test_a_bomb_built_from_mapping_keys_and_values_is_refused_too() -> None:
    levels = ["&m0 {a: lol, b: lol, c: lol, d: lol}"]
    levels += [f"&m{n} {{a: *m{n - 1}, b: *m{n - 1}, c: *m{n - 1}, d: *m{n - 1}}}" for n in range(1, 16)]
    err = refused("script", "[" + ", ".join(levels) + "]", "more than 1,000,000 values", column_offset=None)
    assert load_text("script", "[" + ", ".join(levels) + "]")[err.column - 1 :].startswith("*m")


def test_ordinary_aliases_still_work_and_are_independent_copies() -> None:
    args = load("script", "{a: &x {path: p, n: [1, 2]}, b: *x}").agents["a"][0].args["k"]
    assert args == {"a": {"path": "p", "n": [1, 2]}, "b": {"path": "p", "n": [1, 2]}}
    assert args["a"] is not args["b"]
    assert load("script", laughs(5)).agents["a"][0].args["k"][4][0][0][0][0] == ["lol"] * 10  # 10**5 values: fine


@pytest.mark.parametrize("kind", KIND_IDS)
@pytest.mark.parametrize(("value", "offset"), [("&a [*a]", 4), ("&a {k: *a}", 7), ("&a [x, [y, *a]]", 11)])
def test_recursive_aliases_are_refused(kind: str, value: str, offset: int) -> None:
    refused(kind, value, "alias *a is inside the node it names", column_offset=offset)


@pytest.mark.parametrize("kind", KIND_IDS)
@pytest.mark.parametrize("value", [r'"\ud800"', r'"x\udfff"', r'"\ud83d\ude00"', r'"\uDBFF"'])
def test_lone_surrogate_escapes_are_refused(kind: str, value: str) -> None:
    refused(kind, value, "half of a UTF-16 surrogate pair")


@pytest.mark.parametrize("kind", KIND_IDS)
@pytest.mark.parametrize("value", [r'"ab\U99999999"', r'"ab\UFFFFFFFF"', r'"ab\U00110000"'])
def test_escapes_beyond_unicode_are_refused(kind: str, value: str) -> None:
    refused(kind, value, f"invalid escape: {value[3:13]} is not a Unicode character", column_offset=3)


def test_a_real_astral_character_is_fine() -> None:
    assert load("script", r'"\U0001F600 😀"').agents["a"][0].args == {"k": "\U0001F600 \U0001F600"}


@pytest.mark.parametrize("kind", KIND_IDS)
def test_deep_nesting_is_refused(kind: str) -> None:
    refused(kind, "[" * 5000 + "]" * 5000, "nested too deeply (more than 100 levels)", column_offset=100 - _DEPTH[kind])


@pytest.mark.parametrize("kind", KIND_IDS)
def test_unhashable_or_duplicate_keys_in_free_form_values_are_positioned_errors(kind: str) -> None:
    if kind == "script":  # free-form args
        refused("script", "{[a]: 1}", "keys must be plain values", column_offset=1)
        refused("script", "{a: 1, a: 2}", "duplicate key 'a'", column_offset=7)
    else:  # typed fields
        refused(kind, "{[a]: 1}", "must be a string")
