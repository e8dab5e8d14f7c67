"""Property-based fuzzing of the three YAML loaders (rules, script, answers).

Three kinds of input per loader: random token soup, valid files with hostile mutations
(control characters, tags, anchors and aliases, huge numbers, surrogate escapes, deep
brackets spliced in anywhere), and alias bombs of random shape placed inside valid files.
Every example must end, within a CPU-time limit, in a loaded value that later code can use
as it is (JSON-serializable, no cycles, encodable as UTF-8) or in the loader's own
`FILE:LINE:COL: message` error: never another exception.

CI runs FUZZ_EXAMPLES examples per test (default 300); more locally with
`ESCALATE_FUZZ_EXAMPLES=5000 python -m pytest tests/rules/test_yaml_fuzz.py`.
"""

from __future__ import annotations

import json
import os
import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings, strategies as st

from engine.escalation.answers import parse_answers
from engine.runtime.script import parse_script
from rules import parse_rules
from rules.yamlload import MAX_VALUES
from rules.yamlnodes import YamlError

FUZZ_EXAMPLES = int(os.environ.get("ESCALATE_FUZZ_EXAMPLES", "300"))
CPU_SECONDS_PER_EXAMPLE = 10.0  # generous: a hang, not a slow machine, is what it catches
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PARSERS: dict[str, Callable[[str, str], Any]] = {"rules": parse_rules, "script": parse_script, "answers": parse_answers}


class Hang(Exception):
    pass


@contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    """Raise Hang in this thread once the process used `seconds` more CPU time.

    SIGVTALRM (process CPU time) rather than SIGALRM, which pytest-timeout owns.
    """
    def on_alarm(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} CPU seconds")

    previous = signal.signal(signal.SIGVTALRM, on_alarm)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def _fields(value: Any) -> Any:
    if hasattr(value, "__dict__"):
        return vars(value)
    return getattr(value, "source", None) or str(value)  # a rule Pattern keeps its source


def check(kind: str, text: str) -> str:
    """Load `text`; 'ok' or 'error' (an assertion fails on anything else)."""
    with cpu_limit(CPU_SECONDS_PER_EXAMPLE):
        try:
            result = PARSERS[kind](text, "F.yaml")
        except YamlError as exc:
            message = str(exc)
            assert exc.line >= 1 and exc.column >= 1, message
            assert message.startswith(f"F.yaml:{exc.line}:{exc.column}: ") and "\n" not in message, message
            event(f"{kind}: error: {_kind_of(exc.message)}")  # counts: --hypothesis-show-statistics
            return "error"
        # What was accepted is usable as it is: no cycle, nothing UTF-8 cannot carry.
        json.dumps(result, default=_fields, ensure_ascii=False).encode("utf-8")
        event(f"{kind}: ok")
        return "ok"


_ERROR_KINDS = ("invalid YAML", "unprintable character", "tag", "is not a valid", "number too long", "values (an alias",
                "alias *", "surrogate", "nested too deeply", "regular expression", "must be at most")


def _kind_of(message: str) -> str:
    return next((kind for kind in _ERROR_KINDS if kind in message), "validation")


# -- inputs --------------------------------------------------------------------------------------

HOSTILE = [
    "\x00", "\x1b", "\x07", "\x7f", "\x1b]52;c;aGk=\x07", "\ufeff", "\x85", "\u2028", "\r",
    "!!int ", "!!float ", "!!bool ", "!!null ", "!!str ", "!!timestamp ", "!!binary ", "!!set ", "!!seq ", "!!map ",
    "!foo ", "! ", "!!python/object/apply:os.system ", "!<tag:yaml.org,2002:int> ", "%TAG !e! tag:yaml.org,2002:\n---\n",
    "&a ", "&b ", "*a", "*b", "&a [*a]", "&a {k: *a}", "<<: ", "? ", ": ", "- ", "[", "]", "{", "}", ",", "|", ">", "#",
    "9" * 309, "9" * 4301, "1e9", "1e400", "-1e300", ".inf", ".nan", "0x" + "f" * 120, "1" + ":59" * 60, "2020-99-99",
    '"\\ud800"', '"\\udfff\\ud800"', '"\\U99999999"', '"\\x1b"', "'it''s'", '"\\', "---\n", "...\n", "\n", "  ", "\t", "re:(a+)+$",
    "re:(a)\\1", "re:(?=x)", "re:(", "[" * 200, "{a: " * 120,
]
KEYS = [
    "escalationRules", "global", "taskOverrides", "defaults", "policy", "pattern", "action", "timeout", "onTimeout",
    "alwaysAsk", "requireConfirmation", "rules", "paths", "fallbacks", "maxDepth", "loopWindow", "targetHints",
    "agents", "text", "tool", "args", "when", "escalate", "question", "reason", "context", "options", "id", "label",
    "recommended", "allowAgentDecision", "responseType", "selectedOption", "textResponse", "additionalInstructions",
]
soup = st.lists(st.one_of(st.sampled_from(HOSTILE), st.sampled_from(KEYS), st.text(max_size=6)), max_size=40).map("".join)

names = st.text(alphabet="abcdefgh_-", min_size=1, max_size=8)
def _numeric(word: str) -> bool:
    """PyYAML's dumper (YAML 1.1) leaves `0E0` unquoted, which our loader reads as the number it
    is in YAML 1.2: valid files keep their words text."""
    try:
        float(word)
    except ValueError:
        return False
    return True


words = st.text(max_size=12).filter(lambda word: not _numeric(word))
numbers = st.one_of(st.integers(-10, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=32))
free = st.recursive(st.one_of(st.none(), st.booleans(), numbers, words),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(names, inner, max_size=3)),
                    max_leaves=12)

rule = st.fixed_dictionaries({"pattern": st.one_of(words.filter(str.strip), st.just("re:rm\\s+-rf")),
                              "action": st.sampled_from(["ask_user", "allow", "deny", "stop"])},
                             optional={"timeout": st.integers(0, 10**4)})
rules_doc = st.fixed_dictionaries({}, optional={
    "escalationRules": st.fixed_dictionaries({}, optional={
        "global": st.lists(rule, max_size=3),
        "taskOverrides": st.dictionaries(names, st.fixed_dictionaries(
            {}, optional={"alwaysAsk": st.booleans(), "rules": st.lists(rule, max_size=2)}), max_size=2),
        "defaults": st.dictionaries(st.sampled_from(["cost_warning", "test_failure", "other"]), st.fixed_dictionaries(
            {"onTimeout": st.sampled_from(["continue", "stop", "wait", "option:opt1"])},
            optional={"timeout": st.integers(0, 10**5)}), max_size=3),
    }),
    "policy": st.fixed_dictionaries({}, optional={
        "paths": st.dictionaries(names, st.lists(names, max_size=3), max_size=2),
        "maxDepth": st.integers(1, 100), "loopWindow": st.integers(0, 10**4),
    }),
})
reply = st.one_of(
    words,
    st.fixed_dictionaries({"text": words}, optional={"when": words.filter(str.strip)}),
    st.fixed_dictionaries({"tool": names}, optional={"args": st.dictionaries(names, free, max_size=3)}),
    st.fixed_dictionaries({"escalate": st.fixed_dictionaries(
        {"question": words.filter(str.strip)},
        optional={"reason": names, "timeout": st.integers(0, 1000), "allowAgentDecision": st.booleans(),
                  "options": st.lists(st.fixed_dictionaries({"id": names, "label": names}), max_size=2)})}),
)
script_doc = st.fixed_dictionaries({"agents": st.dictionaries(names, st.lists(reply, max_size=3), max_size=3)})
answer = st.one_of(
    st.fixed_dictionaries({"responseType": st.just("option"), "selectedOption": names},
                          optional={"additionalInstructions": words}),
    st.fixed_dictionaries({"responseType": st.just("text"), "textResponse": words}),
    st.fixed_dictionaries({"responseType": st.sampled_from(["skip", "agent_decide"])}),
)
answers_doc = st.lists(answer, max_size=4)
VALID = {"rules": rules_doc, "script": script_doc, "answers": answers_doc}


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> str:
    """A valid file of `kind` (flow or block style) with 1 to 4 hostile splices."""
    text = yaml.safe_dump(draw(VALID[kind]), default_flow_style=draw(st.sampled_from([False, None, True])),
                          allow_unicode=True)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.sampled_from([0, 0, 0, 1, 5]))  # mostly insert, sometimes overwrite
        text = text[:at] + draw(st.sampled_from(HOSTILE)) + text[at + cut :]
    return text


@st.composite
def bombed(draw: st.DrawFn) -> tuple[str, int]:
    """An alias bomb of random shape (the whole file or one value) and its expanded size."""
    width, levels = draw(st.integers(2, 12)), draw(st.integers(2, 12))
    seq = draw(st.booleans())
    parts = ["&l0 [lol]" if seq else "&l0 {k: lol}"]
    size = total = 2 if seq else 3
    for n in range(1, levels):
        items = [f"*l{n - 1}" for _ in range(width)]
        if seq:
            parts.append(f"&l{n} [" + ", ".join(items) + "]")
            size = 1 + width * size
        else:
            parts.append(f"&l{n} {{" + ", ".join(f"k{i}: {item}" for i, item in enumerate(items)) + "}")
            size = 1 + width * (1 + size)
        total += size
    bomb = "[" + ", ".join(parts) + "]"
    if draw(st.booleans()):
        return bomb + "\n", 1 + total
    return "escalationRules:\n  global: " + bomb + "\n", 3 + total


# -- properties ------------------------------------------------------------------------------------


@FUZZ
@given(st.sampled_from(list(PARSERS)), soup)
def test_token_soup_never_crashes_or_hangs(kind: str, text: str) -> None:
    check(kind, text)


@FUZZ
@given(st.data())
def test_mutated_rules_files(data: st.DataObject) -> None:
    check("rules", data.draw(mutated("rules")))


@FUZZ
@given(st.data())
def test_mutated_script_files(data: st.DataObject) -> None:
    check("script", data.draw(mutated("script")))


@FUZZ
@given(st.data())
def test_mutated_answers_files(data: st.DataObject) -> None:
    check("answers", data.draw(mutated("answers")))


@settings(FUZZ, max_examples=max(100, FUZZ_EXAMPLES // 3))
@given(st.sampled_from(list(PARSERS)), bombed())
def test_alias_bombs_of_any_shape_end_fast(kind: str, bomb: tuple[str, int]) -> None:
    text, expanded = bomb
    outcome = check(kind, text)
    if expanded > MAX_VALUES:
        with pytest.raises(YamlError, match="more than 1,000,000 values"):
            PARSERS[kind](text, "F.yaml")
    else:
        assert outcome == "error" or kind == "answers"  # a list of lists is no rules or script file


@settings(FUZZ, max_examples=max(100, FUZZ_EXAMPLES // 3))
@given(st.sampled_from(list(PARSERS)), st.data())
def test_valid_files_load(kind: str, data: st.DataObject) -> None:
    text = yaml.safe_dump(data.draw(VALID[kind]), allow_unicode=True, default_flow_style=data.draw(st.booleans()))
    assert check(kind, text) == "ok", text
