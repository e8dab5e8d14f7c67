"""`escalate check PATH... [--format text|json]`: parse and analyze .sr files.

Exit 0 when clean or warnings only, 1 on errors, 2 when a file cannot be read. Imports only the
compiler (no ADK, no Textual), so it starts fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.lang.compiler import CompileResult, compile_file, is_unreadable
from engine.lang.diagnostics import Diagnostic, error, render_json, render_text


def expand(paths: list[str]) -> tuple[list[Path], list[Diagnostic]]:
    """Files as given; folders -> every `*.sr` under them (sorted)."""
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.sr") if q.is_file())
            files.extend(found)
        else:
            files.append(p)  # a missing file is reported by compile_file (E0020, exit 2)
    return files, problems


def main(args: argparse.Namespace) -> int:
    files, problems = expand(list(args.paths))
    results: list[CompileResult] = [compile_file(f, generate=False) for f in files]
    diags = problems + [d for r in results for d in r.diagnostics]
    if args.format == "json":
        sys.stdout.write(render_json(diags) + "\n")
    else:
        sources: dict[str, str] = {}
        for r in results:
            sources.update(r.sources)
        out = render_text(diags, sources)
        if out:
            sys.stdout.write(out)
        n_err = sum(1 for d in diags if d.is_error)
        n_warn = len(diags) - n_err
        sys.stderr.write(f"checked {len(files)} file{'s' if len(files) != 1 else ''}: "
                         f"{n_err} error{'s' if n_err != 1 else ''}, {n_warn} warning{'s' if n_warn != 1 else ''}\n")
    if any(is_unreadable(r) for r in results) or problems:
        return 2
    return 1 if any(d.is_error for d in diags) else 0
