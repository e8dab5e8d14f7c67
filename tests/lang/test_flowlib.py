import pytest

from engine.flow import flowlib as rt
from engine.flow.flow_api import FlowError


# Seed 001's table, exactly.
@pytest.mark.parametrize("left,right,expected", [
    ("DRIFTING", "DRIFTING", True),
    ("drifting", "DRIFTING", True),
    ("**Drifting.**\n", "DRIFTING", True),
    ("  Drifting!  ", "DRIFTING", True),
    ("I am drifting", "DRIFTING", False),
])
def test_normalized_equals_seed_table(left, right, expected):
    assert rt.normalized_equals(left, right) is expected


def test_normalize_rules():
    assert rt.normalize("# `Hello`,   _World_;: ?") == "hello world"
    assert rt.normalize("a-b") == "a-b"  # only the listed punctuation goes
    assert rt.normalized_equals(3.14, "3.14") is True  # both sides as text
    assert rt.normalize(3.14) == "314"


def test_add_semantics():
    assert rt.add([1], 2) == [1, 2]
    assert rt.add([1], [2, 3]) == [1, 2, 3]
    assert rt.add("a", 1) == "a1"
    assert rt.add(1, 2) == 3
    with pytest.raises(FlowError):
        rt.arith("-", "a", 1, 3)


def test_contains_is_b_in_a():
    assert rt.contains("an ERROR here", "ERROR")
    assert rt.contains([1, 2], 2)
    assert not rt.contains(None, "x")


def test_property_access_and_filter():
    items = [{"score": 90, "n": 1}, {"score": 10, "n": 2}]
    assert rt.filter_list(items, lambda it: rt.compare(">", rt.path(it, ("score",)), 50)) == [items[0]]
    assert rt.prop('{"a": 1}', "a") == 1  # agent text holding JSON
    assert rt.prop(object(), "__class__") is None  # never Python internals


def test_soft_var_and_interpolate():
    assert rt.soft_var({"x": {"a": 1}}, "x", ("a",), "$x.a") == 1
    assert rt.soft_var({}, "x", (), "$x") == "$x"
    assert rt.interpolate(["n=", 3, " ", None, [1]]) == "n=3 [1]"


def test_iterate_and_push():
    assert rt.iterate('["a", "b"]') == ["a", "b"]
    assert rt.iterate("a\n\nb") == ["a", "b"]
    assert rt.push(None, 1, None) == [1]
    assert rt.push([0], "hi", "user") == [0, {"role": "user", "content": "hi"}]
    with pytest.raises(FlowError):
        rt.loop_count(-1, 2)
