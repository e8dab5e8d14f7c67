"""`escalate rules check R.yaml`: validate a rules file (0 valid, 1 invalid, 2 unreadable).
`escalate rules schema [rules|script|answers]`: print a file format's JSON Schema (0)."""

from __future__ import annotations

import argparse
import sys

from engine.cli.main import EXIT_ERROR, EXIT_OK, EXIT_USAGE, write_line


def main(args: argparse.Namespace) -> int:
    if args.rules_command == "schema":
        from rules.schema import json_schema

        sys.stdout.write(json_schema(args.kind) + "\n")
        return EXIT_OK
    from rules import RulesError, RulesUnreadable, load_rules

    try:
        rules = load_rules(args.file)
    except RulesUnreadable as exc:
        write_line(str(exc))
        return EXIT_USAGE
    except RulesError as exc:
        write_line(str(exc))
        return EXIT_ERROR
    write_line(f"{args.file}: ok: {rules.summary()}", sys.stdout)
    return EXIT_OK
