"""engine/kernel/frozen.py behaves as the frozen dataclass it stands for (the rules, the verdict
and the hook's call are such records): the same construction, defaults, equality, hash, repr,
`replace`, refused assignment, and the same errors for wrong arguments."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from engine.kernel.frozen import Frozen, factory, replace


class Record(Frozen):
    name: str
    size: int = 0
    tags: dict[str, str] = factory(dict)


@dataclasses.dataclass(frozen=True)
class Record_:
    name: str
    size: int = 0
    tags: dict[str, str] = dataclasses.field(default_factory=dict)


class Small(Frozen):
    name: str
    size: int = 0


@dataclasses.dataclass(frozen=True)
class Small_:
    name: str
    size: int = 0


@pytest.mark.parametrize("args, kwargs", [(("a",), {}), (("a", 2), {}), (("a",), {"size": 3}),
                                          ((), {"name": "b", "tags": {"x": "y"}}), (("a", 1, {"k": "v"}), {})])
def test_construction_and_repr_are_the_dataclass_s(args: tuple, kwargs: dict) -> None:
    mine, theirs = Record(*args, **kwargs), Record_(*args, **kwargs)
    assert repr(mine) == repr(theirs).replace("Record_(", "Record(")
    assert (mine.name, mine.size, mine.tags) == (theirs.name, theirs.size, theirs.tags)


def test_a_default_factory_is_made_anew_for_each_record() -> None:
    assert Record("a").tags == {} and Record("a").tags is not Record("a").tags
    assert "tags" not in vars(Record)  # as a dataclass: no class attribute left for a factory


def test_equality_and_hash_by_value_within_one_class() -> None:
    assert Small("a", 1) == Small("a", 1) and hash(Small("a", 1)) == hash(Small("a", 1))
    assert Small("a", 1) != Small("a", 2)
    assert Small("a", 1) != Small_("a", 1) and Small("a", 1) != ("a", 1)
    assert len({Small("a"), Small("a"), Small("b")}) == 2
    with pytest.raises(TypeError):
        hash(Record("a"))  # a dict field: unhashable, as the dataclass is


def test_assignment_is_refused_and_replace_copies() -> None:
    record = Small("a", 1)
    with pytest.raises(AttributeError):
        record.size = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del record.size
    assert replace(record, size=5) == Small("a", 5) and record == Small("a", 1)
    with pytest.raises(TypeError):
        replace(record, colour="red")


@pytest.mark.parametrize("args, kwargs", [((), {}), (("a", 1, {}, 4), {}), (("a",), {"name": "b"}), (("a",), {"colour": 1})])
def test_wrong_arguments_are_a_type_error_as_for_the_dataclass(args: tuple, kwargs: dict) -> None:
    with pytest.raises(TypeError):
        Record_(*args, **kwargs)
    with pytest.raises(TypeError):
        Record(*args, **kwargs)


def test_a_field_without_a_default_after_one_with_a_default_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default"):
        class Bad(Frozen):  # noqa: F841
            size: int = 0
            name: str


def test_records_pickle_and_copy_as_they_are() -> None:
    import copy

    record = Record("a", 2, {"k": "v"})
    assert pickle.loads(pickle.dumps(record)) == record
    assert copy.deepcopy(record) == record and copy.copy(record) == record
