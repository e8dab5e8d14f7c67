"""The import graph of engine, rules and tui, computed from every module's syntax tree: every
import that runs counts (inside functions too, relative or absolute, and `import_module` of a
module named in the same file); an `if TYPE_CHECKING:` block runs nothing. No cycle between
modules, none between packages, each layer imports only the layers below it, and neither
engine nor rules imports Textual."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("engine", "rules", "tui")

# Top to bottom (docs/architecture.md): a package imports only its own layer and those below.
# Within a layer, imports are allowed as long as they make no cycle.
LAYERS: list[set[str]] = [
    {"tui", "engine.cli", "engine.__main__", "engine.outside"},  # engine.outside: outside agents' desk
    {"engine.services"},
    {"engine.runtime"},
    {"engine.durable"},
    {"engine.escalation"},
    {"engine.lang"},
    {"rules", "engine.flow"},
    {"engine.kernel"},
    {"engine", "engine.files", "engine.positions", "engine.text_safety", "engine.private", "engine.trusted", "engine.token_gate",
     "engine.demo", "engine.examples"},  # the leaves (demo and examples hold data files)
]



@dataclass
class Graph:
    root: Path
    modules: dict[str, Path]
    edges: dict[str, dict[str, int]] = field(default_factory=dict)  # module -> {imported: line}
    textual: list[str] = field(default_factory=list)  # "module:line" importing textual

    def where(self, a: str, b: str) -> str:
        """Where module `a` imports module `b`: "engine/x/y.py:LINE imports B"."""
        return f"{self.modules[a].relative_to(self.root).as_posix()}:{self.edges[a][b]} imports {b}"


def _modules(root: Path) -> dict[str, Path]:
    found = {}
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _parse(text: str, path: Path) -> ast.Module:
    """ast.parse, once more on CPython 3.11.7's spurious "AST constructor recursion depth
    mismatch" (gh-106905, fixed in 3.11.8: the depth counter is shared by threads, and another
    test's thread converting an AST at the same moment trips it; seen under pytest -n 2)."""
    try:
        return ast.parse(text, str(path))
    except SystemError:
        return ast.parse(text, str(path))


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement that may run, nested ones too (imports are statements); the body of an
    `if TYPE_CHECKING:` never runs (its `else:` does)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If) and _is_type_checking(stmt.test):
            yield from _statements(stmt.orelse)
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, name, []))
        for inner in getattr(stmt, "handlers", []) + getattr(stmt, "cases", []):
            yield from _statements(inner.body)


def build(root: Path) -> Graph:
    graph = Graph(root, _modules(root))
    mods = graph.modules

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    for name, path in mods.items():
        text = path.read_text(encoding="utf-8")
        tree = _parse(text, path)
        out: dict[str, int] = {}
        graph.edges[name] = out

        def add(target: str | None, line: int) -> None:
            if target is not None and target != name:
                out.setdefault(target, line)

        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "textual":
                        graph.textual.append(f"{name}:{node.lineno}")
                    add(resolve(alias.name), node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] == "textual":
                    graph.textual.append(f"{name}:{node.lineno}")
                for alias in node.names:
                    # `from package import module` imports the module; `from module import name` the module
                    submodule = f"{source}.{alias.name}"
                    add(submodule if submodule in mods else resolve(source), node.lineno)
        if "import_module(" in text:  # importlib.import_module(NAMES[...]): any module the file names may load
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in mods:
                    add(node.value, node.lineno)
    return graph


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "engine" else parts[0]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def module_cycles(graph: Graph) -> list[list[str]]:
    return cycles({m: set(targets) for m, targets in graph.edges.items()})


def package_edges(graph: Graph) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the module imports that make it."""
    found: dict[tuple[str, str], list[str]] = {}
    for a, targets in graph.edges.items():
        for b in targets:
            if package_of(a) != package_of(b):
                found.setdefault((package_of(a), package_of(b)), []).append(graph.where(a, b))
    return found


def package_cycles(graph: Graph) -> list[list[str]]:
    edges: dict[str, set[str]] = {}
    for a, b in package_edges(graph):
        edges.setdefault(a, set()).add(b)
    return cycles(edges)


def upward_imports(graph: Graph) -> list[str]:
    layer = {package: i for i, members in enumerate(LAYERS) for package in members}
    return [f"{graph.where(a, b)} ({package_of(a)}, layer {layer[package_of(a)]}, imports {package_of(b)}, "
            f"layer {layer[package_of(b)]})"
            for a, targets in sorted(graph.edges.items()) for b in sorted(targets)
            if layer[package_of(b)] < layer[package_of(a)]]


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build(ROOT)


def test_no_module_cycle(graph: Graph) -> None:
    found = module_cycles(graph)
    assert not found, "module import cycles:\n" + "\n".join(
        " -> ".join(c) + "\n  " + "\n  ".join(graph.where(a, b) for a in c for b in c if b in graph.edges[a])
        for c in found)


def test_no_package_cycle(graph: Graph) -> None:
    found = package_cycles(graph)
    edges = package_edges(graph)
    assert not found, "package import cycles:\n" + "\n".join(
        " <-> ".join(c) + "\n  " + "\n  ".join(w for a in c for b in c for w in edges.get((a, b), []))
        for c in found)


def test_every_package_has_a_layer(graph: Graph) -> None:
    placed = set().union(*LAYERS)
    assert {package_of(m) for m in graph.modules} <= placed, "place new packages in LAYERS"


def test_imports_go_down_the_layers(graph: Graph) -> None:
    found = upward_imports(graph)
    assert not found, "imports up the layers:\n" + "\n".join(found)


def test_engine_and_rules_never_import_textual(graph: Graph) -> None:
    found = [where for where in graph.textual if where.split(".")[0] in ("engine", "rules")]
    assert not found, f"engine and rules never import Textual: {found}"


# -- the graph itself: what counts as an import ----------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> Graph:
    for top in TOPS:
        (root / top).mkdir(exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return build(root)


def test_imports_inside_functions_and_relative_ones_count(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "engine/__init__.py": "",
        "engine/a/__init__.py": "",
        "engine/a/one.py": "def f():\n    from . import two\n",
        "engine/a/two.py": "from .one import f\n",
        "engine/b/__init__.py": "from engine.a import one\n",
    })
    assert module_cycles(graph) == [["engine.a.one", "engine.a.two"]]
    assert graph.edges["engine.b"] == {"engine.a.one": 1}


def test_type_checking_imports_do_not_count_but_their_else_does(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "engine/__init__.py": "",
        "engine/kernel/__init__.py": "",
        "engine/kernel/low.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engine.runtime import high\n",
        "engine/runtime/__init__.py": "",
        "engine/runtime/high.py": "import typing\nif typing.TYPE_CHECKING:\n    pass\nelse:\n    import engine.kernel.low\n",
    })
    assert graph.edges["engine.kernel.low"] == {}
    assert graph.edges["engine.runtime.high"] == {"engine.kernel.low": 5}
    assert module_cycles(graph) == [] and upward_imports(graph) == []


def test_a_package_cycle_an_upward_import_and_textual_are_found(tmp_path: Path) -> None:
    graph = _tree(tmp_path, {
        "engine/__init__.py": "",
        "engine/kernel/__init__.py": "",
        "engine/kernel/x.py": "def later():\n    import engine.runtime.y\n",
        "engine/runtime/__init__.py": "",
        "engine/runtime/y.py": "from engine.kernel import x\n",
        "rules/__init__.py": "from textual.app import App\n",
        "engine/cli/__init__.py": "import importlib\nNAMES = {'run': 'engine.runtime.y'}\nimportlib.import_module(NAMES['run'])\n",
    })
    assert module_cycles(graph) == [["engine.kernel.x", "engine.runtime.y"]]
    assert package_cycles(graph) == [["engine.kernel", "engine.runtime"]]
    assert upward_imports(graph) == [
        "engine/kernel/x.py:2 imports engine.runtime.y (engine.kernel, layer 7, imports engine.runtime, layer 2)"]
    assert graph.textual == ["rules:1"]
    assert graph.edges["engine.cli"] == {"engine.runtime.y": 2}
