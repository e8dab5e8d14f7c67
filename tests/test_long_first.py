"""tests/long_first.py: the longest files named there exist (a renamed file would silently run in
its collected place again), and the order puts them first, each file's tests in their order."""

from __future__ import annotations

from pathlib import Path

from tests.long_first import LONGEST_FILES, rank

ROOT = Path(__file__).parents[1]


def test_each_longest_file_exists_once() -> None:
    assert [path for path in LONGEST_FILES if not (ROOT / path).is_file()] == []
    assert len(set(LONGEST_FILES)) == len(LONGEST_FILES)


def test_the_longest_files_first_in_their_order_and_the_rest_as_collected() -> None:
    collected = ["tests/a/test_x.py::test_1", f"{LONGEST_FILES[1]}::test_b[1]", "tests/a/test_x.py::test_2",
                 f"{LONGEST_FILES[0]}::test_a", f"{LONGEST_FILES[1]}::test_b[0]", "tests/test_y.py::test_3"]
    assert sorted(collected, key=rank) == [f"{LONGEST_FILES[0]}::test_a", f"{LONGEST_FILES[1]}::test_b[1]",
                                           f"{LONGEST_FILES[1]}::test_b[0]", "tests/a/test_x.py::test_1",
                                           "tests/a/test_x.py::test_2", "tests/test_y.py::test_3"]
