"""`escalate worker [--db URL] [--concurrency N]`: execute queued runs (`run --detach`) and take
over the runs of processes that died, until stopped. SIGTERM (or Ctrl-C): the steps in flight
finish, the runs are left for another worker, exit 0; a second signal stops at once.
Exit codes: 0 stopped, 2 usage or unusable database."""

from __future__ import annotations

import argparse
import asyncio

from engine.cli.run_cmd import EXIT_USAGE, _err
from engine.runtime.priority_loop import PriorityLoop


def main(args: argparse.Namespace) -> int:
    from engine.runtime.adk_setup import prepare_adk

    prepare_adk()
    # The runs' work waits behind the escalations' (raised, answered: engine/runtime/frames.py
    # clears BACKGROUND for a human wait), so twenty busy runs do not delay what a person sees.
    with asyncio.Runner(loop_factory=PriorityLoop) as runner:
        return runner.run(_serve(args))


async def _serve(args: argparse.Namespace) -> int:
    from engine.durable.database import DatabaseError
    from engine.services import open_database
    from engine.services.worker import Worker

    try:
        db = open_database(args.db)
    except DatabaseError as exc:
        _err(f"--db {exc}")
        return EXIT_USAGE
    try:
        return await Worker(db, args.concurrency, _err).serve()
    except DatabaseError as exc:
        _err(f"--db {exc}")
        return EXIT_USAGE
