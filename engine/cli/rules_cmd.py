"""`escalate rules check R.yaml`: validate a rules file (0 valid, 1 invalid, 2 unreadable).
`escalate rules schema [rules|script|answers]`: print a file format's JSON Schema (0).
`escalate rules trust FILE`: let a workspace rules file's `notify` command run, for the file's
content as it is now (0 trusted, 1 invalid, 2 unreadable)."""

from __future__ import annotations

import argparse
import sys

from engine.cli.output import EXIT_ERROR, EXIT_OK, EXIT_USAGE, write_line


def main(args: argparse.Namespace) -> int:
    if args.rules_command == "schema":
        from rules.schema import json_schema

        sys.stdout.write(json_schema(args.kind) + "\n")
        return EXIT_OK
    from rules import RulesError, RulesUnreadable, load_rules

    if args.rules_command == "trust":
        return _trust(args.file)

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


def _trust(file: str) -> int:
    """Validated first: a file that does not load is never trusted."""
    from pathlib import Path

    from engine.trusted import TrustError, config_path, trust_rules
    from rules import RulesError, RulesUnreadable, load_rules

    try:
        rules = load_rules(file)
        trust_rules(Path(file))
    except (RulesUnreadable, TrustError) as exc:
        write_line(str(exc))
        return EXIT_USAGE
    except RulesError as exc:
        write_line(str(exc))
        return EXIT_ERROR
    what = f"its notify command {list(rules.notify.command)} may run" if rules.notify else "it has no notify command"
    write_line(f"{file}: trusted as it is now (kept in {config_path()}): {what}", sys.stdout)
    return EXIT_OK
