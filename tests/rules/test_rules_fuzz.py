"""Hostile and random rules/answers files: only our own positioned errors, never a crash."""

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from engine.escalation.answers import AnswersError, parse_answers
from rules import RulesError, parse_rules

KEYS = [
    "escalationRules", "global", "taskOverrides", "defaults", "policy", "pattern", "action", "timeout",
    "onTimeout", "alwaysAsk", "requireConfirmation", "rules", "paths", "fallbacks", "maxDepth",
    "loopWindow", "targetHints", "cost_warning", "responseType", "selectedOption", "textResponse",
]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 500), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["ask_user", "allow", "deny", "stop", "wait", "option:x", "re:(", "re:a+", "option", "skip", ""]),
    st.text(max_size=8),
)
trees = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=5)), children, max_size=4),
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_random_structures_give_rules_or_a_positioned_error(tree: object) -> None:
    text = yaml.safe_dump(tree)
    for parse, error in ((parse_rules, RulesError), (parse_answers, AnswersError)):
        try:
            parse(text, "F.yaml")
        except error as exc:
            assert exc.line >= 1 and exc.column >= 1 and str(exc).startswith("F.yaml:")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc:-_ \n\t{}[]\"'#&*!|>%@`re0.9")), max_size=60))
def test_random_text_never_crashes(text: str) -> None:
    for parse, error in ((parse_rules, RulesError), (parse_answers, AnswersError)):
        try:
            parse(text, "F.yaml")
        except error as exc:
            assert str(exc).startswith("F.yaml:")
