"""`escalate rules check R.yaml`: validate a rules file (0 valid, 1 invalid, 2 unreadable)."""

from __future__ import annotations

import argparse
import sys

from engine.cli.main import EXIT_ERROR, EXIT_OK, EXIT_USAGE, write_line


def main(args: argparse.Namespace) -> int:
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
