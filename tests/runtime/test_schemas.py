"""`expecting Schema` replies: the JSON is found bare, fenced or amid prose, in linear time."""

from __future__ import annotations

import pytest

from engine.runtime.schemas import SchemaMismatch, parse_json


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        'Here:\n```json\n{"a": 1}\n```',
        'I think {not json} the answer is {"a": 1} }',
        '[{"a": 1}',
    ],
)
def test_the_first_json_value_is_found(text: str) -> None:
    assert parse_json(text) == {"a": 1}


def test_an_array_amid_prose() -> None:
    assert parse_json("the list: [1, 2] and more") == [1, 2]


@pytest.mark.timeout(20)  # a decode tried at every `{` took minutes on these
@pytest.mark.parametrize(
    "text", ["{" * 1_000_000, "[{" * 500_000, '{"a":' * 200_000], ids=["open-braces", "mixed", "deep-nesting"]
)
def test_hostile_replies_fail_quickly(text: str) -> None:
    with pytest.raises(SchemaMismatch):
        parse_json(text)
