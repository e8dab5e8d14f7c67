"""No private attribute of another library without a measured reason next to it, none of our own
read across modules (issue 23). A `_name` read in a module that never defines it (no def, class,
assignment of it there) belongs to another module or library: only the kept ones below pass, and
no module is imported through a private module path."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "tui", "rules")

# (file, expression): each is documented where it is read, with its figure.
KEPT = {
    # asyncio's ready queue and timer heap: tests/benchmarks/bench_private_attrs.py (frame lateness).
    ("engine/runtime/priority_loop.py", "self._ready"),
    ("engine/runtime/priority_loop.py", "self._scheduled"),
    # Textual has no public way to write an escape sequence (OSC 9/777, the terminal's title).
    ("tui/app.py", "self._driver"),
    # Textual's scrollbar update: bench_private_attrs.py (against a layout of the screen).
    ("tui/widgets/event_log.py", "self._scroll_update"),
    ("tui/widgets/row_table.py", "self._scroll_update"),
    # Pydantic's default config: no public default for every model (docs/startup.md, ADK's warm-up).
    ("engine/runtime/adk_setup.py", "from pydantic._internal import"),
    # DBOS's own dequeue, once, for a run put on this process's queue: its wake 990 -> 89 ms with no
    # queue polled (engine/durable/take.py, docs/durable.md "Wake"); DBOS has no public call for it.
    ("engine/durable/take.py", "from dbos._core import"),
    ("engine/durable/take.py", "from dbos._dbos import"),
    ("engine/durable/take.py", "from dbos._queue import"),
    ("engine/durable/take.py", "dbos._sys_db"),
}
PUBLIC_DESPITE_THE_UNDERSCORE = {"_exit", "_replace", "_asdict", "_fields", "_make"}  # os, namedtuple


def _defined(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name not in PUBLIC_DESPITE_THE_UNDERSCORE


@lru_cache(maxsize=None)  # both tests read the same tree
def private_reads(root: Path) -> frozenset[tuple[str, str]]:
    """(file, expression) of every private attribute read from elsewhere, and private imports."""
    found: set[tuple[str, str]] = set()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            rel = path.relative_to(root).as_posix()
            defined = _defined(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in defined:
                    found.add((rel, ast.unparse(node)))
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if any(_private(part) for part in node.module.split(".")[1:]):
                        found.add((rel, f"from {node.module} import"))
    return frozenset(found)


def test_private_attributes_only_where_measured() -> None:
    assert private_reads(ROOT) - KEPT == set()


def test_the_kept_ones_are_still_there() -> None:
    # A kept one that is gone should leave the list too.
    assert KEPT - private_reads(ROOT) == set()


def test_the_check_sees_a_read_across_modules(tmp_path: Path) -> None:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "a.py").write_text(
        "from google.adk.models._capabilities import LlmCapabilities\n"
        "def f(run):\n    return run._factory\n", encoding="utf-8")
    (tmp_path / "engine" / "b.py").write_text(
        "class B:\n    def __init__(self):\n        self._factory = None\n", encoding="utf-8")
    assert private_reads(tmp_path) == {("engine/a.py", "run._factory"),
                                       ("engine/a.py", "from google.adk.models._capabilities import")}
