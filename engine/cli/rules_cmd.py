"""`escalate rules check R.yaml`: validate a rules file (0 valid, 1 invalid, 2 unreadable)."""

from __future__ import annotations

import argparse
import sys

from engine.cli.main import EXIT_ERROR, EXIT_OK, EXIT_USAGE


def main(args: argparse.Namespace) -> int:
    from rules import RulesError, RulesUnreadable, load_rules

    try:
        rules = load_rules(args.file)
    except RulesUnreadable as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_USAGE
    except RulesError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_ERROR
    sys.stdout.write(f"{args.file}: ok: {rules.summary()}\n")
    return EXIT_OK
