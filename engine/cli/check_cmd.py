"""`escalate check PATH... [--format text|json]`: parse and analyze .sr files.

Exit 0 when clean or warnings only, 1 on errors, 2 when a file cannot be read. Imports only the
compiler front end (no ADK, no Textual, and no Lark unless a file has a syntax error).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.cli.output import write_line
from engine.lang.compiler import CompileResult, compile_file, is_unreadable
from engine.lang.diagnostics import render_json, render_text


def expand(paths: list[str]) -> list[Path]:
    """Files as given (a missing one is reported as unreadable); folders -> every `*.sr` under them."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*.sr") if q.is_file()))
        else:
            files.append(p)
    return files


def main(args: argparse.Namespace) -> int:
    files = expand(list(args.paths))
    results: list[CompileResult] = [compile_file(f, check_only=True) for f in files]
    diags = [d for r in results for d in r.diagnostics]
    if args.format == "json":
        sys.stdout.write(render_json(diags) + "\n")
    else:
        sources: dict[str, str] = {}
        for r in results:
            sources.update(r.sources)
        out = render_text(diags, sources)
        if out:
            write_line(out, sys.stdout)
        n_err = sum(1 for d in diags if d.is_error)
        n_warn = len(diags) - n_err
        write_line(f"checked {len(files)} file{'s' if len(files) != 1 else ''}: "
                   f"{n_err} error{'s' if n_err != 1 else ''}, {n_warn} warning{'s' if n_warn != 1 else ''}")
    if any(is_unreadable(r) for r in results):
        return 2
    return 1 if any(d.is_error for d in diags) else 0
