"""`escalate compile FILE.sr [-o OUT.py]`: print or write the generated Python.

Exit 0, 1 on compile errors (diagnostics on stderr), 2 when the file cannot be read or the
output cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.cli.output import write_line
from engine.lang.compiler import compile_file, is_unreadable
from engine.lang.diagnostics import render_text


def main(args: argparse.Namespace) -> int:
    result = compile_file(Path(args.file))
    if result.diagnostics:
        write_line(render_text(result.diagnostics, result.sources))
    if is_unreadable(result):
        return 2
    if not result.ok or result.python is None:
        return 1
    if args.output:
        try:
            Path(args.output).write_bytes(result.python.encode("utf-8"))
        except OSError as exc:
            write_line(f"{args.output}: error: cannot write: {exc.strerror or exc}")
            return 2
    else:  # UTF-8, as the module's first line declares, whatever the terminal's encoding
        sys.stdout.flush()
        sys.stdout.buffer.write(result.python.encode("utf-8"))
    return 0
