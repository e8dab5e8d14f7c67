"""Entry point of the `escalate` command.

Reads the command line (engine/cli/parser.py; an agent's hook without argparse, hook_cmd.py
`hook_arguments`) and calls the command; each lives in its own module, imported on demand so that
`escalate check` never pays for ADK or Textual.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
from typing import TYPE_CHECKING, Sequence

from engine.text_safety import utf8_text

if TYPE_CHECKING:
    import argparse
    from types import SimpleNamespace


# command name -> module with `main(args) -> int`
_COMMANDS = {
    None: "engine.cli.console_cmd",
    "console": "engine.cli.console_cmd",
    "check": "engine.cli.check_cmd",
    "compile": "engine.cli.compile_cmd",
    "run": "engine.cli.run_cmd",
    "rules": "engine.cli.rules_cmd",
    "runs": "engine.cli.runs_cmd",
    "answer": "engine.cli.answer_cmd",
    "resume": "engine.cli.resume_cmd",
    "serve": "engine.cli.serve_cmd",
    "worker": "engine.cli.worker_cmd",
    "trust": "engine.cli.trust_cmd",
    "mcp": "engine.cli.mcp_cmd",
    "hook": "engine.cli.hook_cmd",
}


TEXT_ARGUMENTS = ("input", "task", "flow", "text", "instructions")  # free text, unlike paths (which must stay as given)


def main(argv: Sequence[str] | None = None) -> int:
    return _dispatch(argv)[1]


def _dispatch(argv: Sequence[str] | None) -> tuple[str | None, int]:
    """(the command run, its exit code)."""
    # Text a terminal's encoding cannot show (PYTHONIOENCODING=ascii, a Latin-1 locale) is
    # escaped rather than a UnicodeEncodeError traceback.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    args = _arguments(sys.argv[1:] if argv is None else argv)
    for name in TEXT_ARGUMENTS:
        if isinstance(getattr(args, name, None), str):
            setattr(args, name, utf8_text(getattr(args, name)))
    allowed = bool(getattr(args, "allow_imports_outside", False))
    if allowed or "engine.lang.compiler" in sys.modules:  # set for this command, whatever an earlier one set
        from engine.lang.compiler import allow_imports_outside

        allow_imports_outside(allowed)
    if args.command not in _COLLECT_LESS_AT_START:
        return _call(args)
    from engine.kernel import collector

    collector.start_up()
    try:
        return _call(args)
    finally:
        collector.started()  # a command that opened no services (answer, runs) is over


def _arguments(argv: Sequence[str]) -> argparse.Namespace | SimpleNamespace:
    """The command line read. An agent's hook (`hook claude|codex ...`, run at every tool call of
    every agent session) is read without argparse when well-formed; anything else by argparse."""
    if argv and argv[0] == "hook":
        args = importlib.import_module("engine.cli.hook_cmd").hook_arguments(argv)
        if args is not None:
            return args
    from engine.cli.parser import parser_for

    return parser_for(argv).parse_args(argv)


def _call(args: argparse.Namespace | SimpleNamespace) -> tuple[str, int]:
    module = importlib.import_module(_COMMANDS[args.command])
    try:
        return args.command, int(module.main(args))
    except KeyboardInterrupt:
        return args.command, 130


# Commands whose start (imports, DBOS's launch, the database's first reads) makes objects that
# live to the end: no collector pass until their services are open or they end, then what exists
# is frozen (engine/kernel/collector.py). The console has its own policy (console_cmd.py: no collection
# until its first frame); long-lived servers (serve, mcp) keep Python's.
_COLLECT_LESS_AT_START = frozenset({"run", "resume", "worker", "answer", "runs"})


# Commands that leave nothing to close (no database, no threads, no files open for writing): the
# process can end without tearing down what they built. For `check` on a 100,000-line file that
# teardown (the interpreter's last collection over some 500,000 AST objects, then freeing them)
# took 0.5-1.5 s of a 3.5-6 s command.
_NOTHING_TO_CLOSE = frozenset({"check"})


def script() -> None:
    """The `escalate` command (and `python -m engine`): main(), then exit."""
    command, code = _dispatch(None)
    if command in _NOTHING_TO_CLOSE:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:  # a closed pipe (`| head`): nothing left to say
                pass
        os._exit(code)
    raise SystemExit(code)


if __name__ == "__main__":
    script()
