"""`escalate trust [--db URL]`: the person says this database's runs may be continued here (a
database they did not create: another user's file, one that came with a repository, a copy).
Exit codes: 0 trusted, 2 usage or unusable database or configuration."""

from __future__ import annotations

import argparse
import sys

from engine.cli.output import EXIT_OK, EXIT_USAGE, write_line


def main(args: argparse.Namespace) -> int:
    from engine.durable.database import DatabaseError
    from engine.durable.trust import shown, trust_database
    from engine.services import open_database
    from engine.trusted import TrustError, config_path

    try:
        db = open_database(args.db)
    except DatabaseError as exc:
        write_line(f"--db {exc}")
        return EXIT_USAGE
    try:
        trust_database(db.engine, db.url)
    except TrustError as exc:
        write_line(str(exc))
        return EXIT_USAGE
    finally:
        db.close()
    write_line(f"{shown(db.url)}: trusted (kept in {config_path()}): its runs may now be continued here", sys.stdout)
    return EXIT_OK
