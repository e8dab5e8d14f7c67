"""The compiler pipeline: read -> parse -> build AST -> resolve imports -> analyze -> generate
-> Python `compile()`; and loading the generated `Workflow` class.

Results are cached by content hash (the file's source and every imported file's source), so
the console and the runtime can call `load_workflow` freely.
"""

from __future__ import annotations

import gc
import hashlib
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from engine.files import MIB, UnreadableFile, read_limited
from engine.lang import ast
from engine.lang.analyzer import analyze
from engine.lang.diagnostics import Diagnostic, error, sort_key
from engine.lang.parser import parse_source
from engine.lang.semantics import ProgramInfo, Unit, gather
from engine.lang.transformer import build_module
from engine.positions import byte_position

if TYPE_CHECKING:
    from engine.flow.spec import WorkflowBase


@dataclass
class CompileResult:
    path: Path
    diagnostics: list[Diagnostic]
    python: str | None
    ok: bool
    sources: dict[str, str] = field(default_factory=dict)  # file -> text, for rendering snippets
    code: types.CodeType | None = None  # `python` compiled once, reused when loading the class


class CompileFailed(Exception):
    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        first = diagnostics[0] if diagnostics else None
        msg = f"{first.file}:{first.line}:{first.column}: {first.message}" if first else "compilation failed"
        super().__init__(msg)
        self.diagnostics = diagnostics


# The console imports this name; it is the same exception.
CompileError = CompileFailed


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ------------------------------------------------------------------ parsing (cached per file content)

@dataclass
class _Parsed:
    module: ast.Module | None
    diagnostics: list[Diagnostic]


_parse_cache: dict[tuple[str, str], _Parsed] = {}
_result_cache: dict[tuple[str, str, bool, bool], CompileResult] = {}
_class_cache: dict[str, type] = {}
_lock = threading.Lock()
_CACHE_LIMIT = 256


def _parse(text: str, file: str) -> _Parsed:
    key = (file, _sha(text))
    hit = _parse_cache.get(key)
    if hit is not None:
        return hit
    pr = parse_source(text, file)
    if pr.tree is None:
        parsed = _Parsed(None, pr.diagnostics)
    else:
        module, diags = build_module(pr.tree, file, pr.bodies)
        parsed = _Parsed(module, diags)
    with _lock:
        if len(_parse_cache) > _CACHE_LIMIT:
            _parse_cache.clear()
        _parse_cache[key] = parsed
    return parsed


SOURCE_LIMIT = 16 * MIB  # the largest .sr file read (docs/language.md): no FIFO, device or huge file hangs us


def _read(path: Path) -> str:
    """A .sr file's text; raises UnreadableFile or UnicodeDecodeError."""
    return read_limited(path, SOURCE_LIMIT).decode("utf-8")


# ------------------------------------------------------------------ imports

# `--allow-imports-outside`: the command line sets it once for the whole process.
_imports_outside_allowed = False


def allow_imports_outside(allowed: bool = True) -> None:
    """Let imports reach files outside the project folder (docs/language.md, "Files")."""
    global _imports_outside_allowed
    _imports_outside_allowed = allowed


def _resolve_imports(main: Unit, base: Path, diagnostics: list[Diagnostic]) -> list[Unit]:
    """Load imported files depth first; dependencies come before the files that import them.
    Every target stays under the project folder, the top-level file's own folder (symbolic links
    followed), unless imports outside are allowed: an outside target is refused unread."""
    ordered: list[Unit] = []
    done: set[Path] = set()
    stack: list[Path] = []
    top = Path(main.file).resolve() if main.file and Path(main.file).exists() else None
    project = top.parent if top else base.resolve()

    def visit(unit: Unit, path: Path | None) -> None:
        for d in unit.module.definitions:
            if not isinstance(d, ast.Import) or d.path is None:
                continue
            try:
                target = ((path.parent if path else base) / d.path).resolve()
            except (OSError, RuntimeError, ValueError) as exc:
                why = ("its symbolic links loop" if isinstance(exc, RuntimeError)
                       else exc.strerror or str(exc) if isinstance(exc, OSError) else "not a usable file name")
                diagnostics.append(error(unit.file, d.line, d.column, "E0005", f"cannot import '{d.path}': {why}"))
                continue
            if not _imports_outside_allowed and not target.is_relative_to(project):
                diagnostics.append(error(unit.file, d.line, d.column, "E0005",
                                         f"cannot import '{d.path}': it is outside the project folder {project}",
                                         "imports stay under the folder of the file given on the command line; "
                                         "--allow-imports-outside lifts that"))
                continue
            if target in stack or (path is not None and target == path):
                chain = " -> ".join(p.name for p in stack + [target])
                diagnostics.append(error(unit.file, d.line, d.column, "E0006", f"circular import: {chain}",
                                         "move the shared definitions into a third file both can import"))
                continue
            if target in done:
                continue
            try:
                text = _read(target)
            except (UnreadableFile, UnicodeDecodeError) as exc:
                why = str(exc) if isinstance(exc, UnreadableFile) else "not UTF-8 text"
                diagnostics.append(error(unit.file, d.line, d.column, "E0005", f"cannot import '{d.path}': {why}",
                                         f"looked for {target}"))
                continue
            file = str(target)
            parsed = _parse(text, file)
            diagnostics.extend(parsed.diagnostics)
            if parsed.module is None:
                done.add(target)
                continue
            sub = Unit(file, parsed.module, text, only={d.name} if d.name else None)
            if d.name and not any(getattr(x, "name", None) == d.name for x in parsed.module.definitions):
                diagnostics.append(error(unit.file, d.line, d.column, "E0001", f"'{d.path}' defines no '{d.name}'"))
            stack.append(target)
            visit(sub, target)
            stack.pop()
            done.add(target)
            ordered.append(sub)

    if top is not None:
        stack.append(top)
    visit(main, top)
    return ordered


# ------------------------------------------------------------------ pipeline

def compile_source(source: str, path: Path, *, check_only: bool = False) -> CompileResult:
    """Compile `.sr` text. Imports are resolved relative to `path`'s folder. `escalate check`
    (`check_only`) runs all of it too, so that a file it calls clean is one that compiles; only
    generating the Python module and Python's own `compile()` of it are left out when the
    program is far inside Python's limits (SAFE_NESTING), where they report nothing."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the pipeline allocates many short-lived trees; cyclic GC passes only cost time
    try:
        return _compile_source(source, Path(path), check_only)
    except (RecursionError, MemoryError):  # Python's own parser gives up on a chain of some 5,000 `elif`s with either
        return CompileResult(Path(path), [error(path, 1, 1, "E0007", "the program nests too deeply to compile")], None, False)
    except Exception as exc:  # a compiler bug must still be one clear line, never a traceback
        return CompileResult(Path(path), [error(path, 1, 1, "E0007", f"internal compiler error: {type(exc).__name__}: {exc}")],
                             None, False)
    finally:
        if gc_was_enabled:
            gc.enable()


# Python refuses 20 nested loops/try blocks, about 100 indentation levels, 200 nested brackets, and
# its parser recurses on long elif chains. The generated code spends at most 3 loop/try blocks
# and 4 indentation levels per .sr statement level, and 3 brackets per expression level: below
# these (statements, expressions in a statement, branches of one if/match) it always compiles.
SAFE_NESTING = (6, 50, 200)


def _far_inside_python_limits(units: list[Unit]) -> bool:
    return all(all(n <= safe for n, safe in zip(u.module.nesting, SAFE_NESTING)) for u in units)


def _compile_source(source: str, path: Path, check_only: bool = False) -> CompileResult:
    file = str(path)
    parsed = _parse(source, file)
    sources = {file: source}
    if parsed.module is None:
        return CompileResult(path, sorted(parsed.diagnostics, key=sort_key), None, False, sources)
    diagnostics: list[Diagnostic] = list(parsed.diagnostics)
    main = Unit(file, parsed.module, source)
    deps = _resolve_imports(main, path.parent, diagnostics) if _has_imports(parsed.module) else []
    units = deps + [main]
    key = (file, _sha("\x00".join(u.source for u in units)), _imports_outside_allowed, check_only)
    cached = _result_cache.get(key)
    if cached is not None:
        return cached
    sources.update({u.file: u.source for u in deps})
    info = gather(units, file)
    diagnostics += info.diagnostics
    diagnostics += analyze(info)
    diagnostics = _dedupe(sorted(diagnostics, key=sort_key))
    ok = not any(d.is_error for d in diagnostics)
    python = code = None
    if ok and not (check_only and _far_inside_python_limits(units)):
        from engine.lang.codegen import generate

        python = generate(info, path.name, _sha(source))
        try:
            code = compile(python, _module_file(path), "exec")
        except SyntaxError as exc:
            diagnostics.append(_python_limit(exc, python, file, source))
            ok, python = False, None
        except (RecursionError, MemoryError):  # Python's parser recurses on a long elif chain
            diagnostics.append(_longest_chain(info))
            ok, python = False, None
    result = CompileResult(path, diagnostics, python, ok, sources, code)
    with _lock:
        if len(_result_cache) > _CACHE_LIMIT:
            _result_cache.clear()
        _result_cache[key] = result
    return result


# Python's own limits on what one function may nest (CPython 3.11): the generated code inherits them.
_PYTHON_LIMITS = {
    "too many statically nested blocks": "more than 20 nested loops",
    "too many levels of indentation": "blocks nested about 95 deep",
    "too many nested parentheses": "an expression nested about 200 deep (a long chain of operators counts one level each)",
}


def _python_limit(exc: SyntaxError, python: str, file: str, source: str) -> Diagnostic:
    """E0022 at the .sr statement whose generated code Python refused (its line comment)."""
    from engine.lang.codegen import LINE_COMMENT

    line = 1
    for text in reversed(python.splitlines()[: exc.lineno or 0]):
        found = LINE_COMMENT.match(text)
        if found:
            line = int(found.group(1))
            break
    text = (source.splitlines()[line - 1:line] or [""])[0]
    column = len(text) - len(text.lstrip()) + 1
    what = next((v for k, v in _PYTHON_LIMITS.items() if k in (exc.msg or "")), None)
    if what is None:  # a generator bug: never the user's fault, but never a traceback either
        return error(file, line, column, "E0007", f"internal error: generated code does not compile ({exc.msg})")
    return error(file, line, column, "E0022", f"nests too deeply to run: {what}", "move the inner part into a flow of its own and `run` it")


def _longest_chain(info: ProgramInfo) -> Diagnostic:
    """E0022 at the if/match with the most branches (its elif chain is what Python refused)."""
    from engine.lang.semantics import walk_statements

    bodies = [f.body for f in info.flows.values()] + [h.body for h in info.handlers]
    bodies += [h.body for a in info.agents.values() for h in a.handlers]
    best: ast.Stmt | None = None
    size = 0
    for body in bodies:
        for s in walk_statements(body):
            n = len(s.branches) if isinstance(s, ast.If) else len(s.cases) if isinstance(s, ast.Match) else 0
            if n > size:
                best, size = s, n
    where = (info.file(best), best.line, best.column) if best is not None else (info.main_file, 1, 1)
    return error(*where, "E0022", f"nests too deeply to run: {size} `when`/`elif` branches in one chain",
                 "split the chain: move part of it into a flow of its own and `run` it")


def _has_imports(module: ast.Module) -> bool:
    return any(isinstance(d, ast.Import) and d.path is not None for d in module.definitions)


def _module_file(path: Path) -> str:
    return f"<escalate:{path.name}>"


def _dedupe(diags: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple] = set()
    out = []
    for d in diags:
        k = (d.file, d.line, d.column, d.code, d.message)
        if k not in seen:
            seen.add(k)
            out.append(d)
    return out


def compile_file(path: Path, *, check_only: bool = False) -> CompileResult:
    """Read and compile a file; an unreadable file is an E0020 diagnostic."""
    path = Path(path)
    try:
        text = _read(path)
    except UnreadableFile as exc:
        return CompileResult(path, [error(path, 1, 1, "E0020", f"cannot read file: {exc}")], None, False)
    except UnicodeDecodeError as exc:
        line, column = byte_position(exc.object, exc.start)
        return CompileResult(path, [error(path, line, column, "E0020", f"cannot read file: not UTF-8 text ({exc.reason} at byte {exc.start})")],
                             None, False)
    return compile_source(text, path, check_only=check_only)


def is_unreadable(result: CompileResult) -> bool:
    return any(d.code == "E0020" for d in result.diagnostics)


def load_workflow(path: Path) -> "type[WorkflowBase]":
    """Compile and import the generated module; raises CompileFailed with the diagnostics."""
    result = compile_file(Path(path))
    if not result.ok or result.python is None:
        raise CompileFailed([d for d in result.diagnostics if d.is_error])
    return workflow_class(result)


def workflow_class(result: CompileResult) -> "type[WorkflowBase]":
    key = _sha(result.python or "")
    cls = _class_cache.get(key)
    if cls is not None:
        return cls  # type: ignore[return-value]
    module = types.ModuleType(f"escalate_generated_{key[:12]}")
    module.__file__ = _module_file(result.path)
    code = result.code or compile(result.python or "", module.__file__, "exec")
    exec(code, module.__dict__)  # our own generated code, user text only as literals
    cls = module.__dict__["Workflow"]
    with _lock:
        _class_cache[key] = cls
    return cls  # type: ignore[return-value]
