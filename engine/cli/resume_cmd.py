"""`escalate resume RUN_ID`: continue an interrupted or waiting run from the database, headless,
in this process, from its last recorded step (exit codes as `run`)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from engine.cli.run_cmd import EXIT_USAGE, UsageError, _err, drive, outcome_code


def main(args: argparse.Namespace) -> int:
    from engine.runtime.adk_setup import prepare_adk

    prepare_adk()
    return asyncio.run(_resume(args))


async def _resume(args: argparse.Namespace) -> int:
    from engine.escalation.answers import AnswersError, load_answers
    from rules.loader import RulesError, load_layered

    from engine.durable.database import PARKED, DatabaseError
    from engine.services import open_database, open_services

    try:
        answers = load_answers(args.answers) if args.answers else []
        db = open_database(args.db, existing=True)  # a run to continue is in a database that exists
    except DatabaseError as exc:
        _err(f"--db {exc}")
        return EXIT_USAGE
    except (AnswersError, UsageError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    row = db.get_run(args.run_id)
    if row is None:
        _err(f"{args.run_id}: no such run in {db.url}")
        db.close()
        return EXIT_USAGE
    label = row["path"]
    if row["status"] == "queued":  # a worker's to start: resuming it here could run it twice
        _err(f"{args.run_id}: queued for a worker, not started yet (escalate worker --db ... runs it)")
        db.close()
        return EXIT_USAGE
    if row["status"] not in ("running", "waiting", PARKED):  # already over: report how it ended
        db.close()
        return outcome_code(_Finished(row), _status(row["status"]), label)
    events = Path(args.events) if args.events else None
    try:
        rules = load_layered(None, row["rules"])  # the run's rules, with the workspace's taught rules over them
        if events is not None:
            _rewrite_events(events, db.events_of(args.run_id))
        services = await open_services(db, identity="escalate resume")
    except (RulesError, UsageError, DatabaseError) as exc:
        _err(f"--db {exc}" if isinstance(exc, DatabaseError) else str(exc))
        db.close()
        return EXIT_USAGE
    engine = services.engine(rules, workspace=Path(row["workspace"]), events=events)
    refusal = await asyncio.to_thread(services.host.refusal, args.run_id)
    if refusal is not None:  # not this user's database, or rows that are not JSON: never read
        _err(refusal)
        services.close()
        return EXIT_USAGE
    # After DBOS's launch (its imports done: two threads importing at once can deadlock on
    # Python's module locks), before the run is handed to DBOS and read back.
    _warm_up_if_due(db, args.run_id, scripted=bool(row["script"]))
    try:
        async def start() -> Any:
            handle = await engine.resume_run(args.run_id)
            if handle is None:
                _err(f"{args.run_id}: the run is active in another process ({row['owner']}); not resumed")
            else:  # back in this process: no poll of its queue while it runs or waits (`--wait`)
                await services.host.resumes_no_more()
            return handle

        return await drive(engine, start, answers=answers, wait=args.wait, label=label, db_arg=args.db)
    finally:
        services.close()


# How an escalation raised inside an agent's call says so (engine.kernel.model.Origin's values):
# once it is decided, continuing the run continues that call, with a model turn.
_IN_AN_AGENT_CALL = ("agent_text", "agent_tool", "tool_approval")


def _warm_up_if_due(db: Any, run_id: str, scripted: bool = False) -> bool:
    """When the run goes on with a model turn (its latest escalation was an agent's, and it is
    decided), ADK's imports and first use start now, on a thread (adk_setup.start_warm_up),
    while DBOS takes the run back and its recorded steps are read; the turn awaits the same
    warm-up. Otherwise nothing: a run that waits again, or whose flow asks a person, never
    imports ADK (docs/startup.md). True when it started."""
    from engine.durable.database import DatabaseError
    from engine.runtime import engine  # noqa: F401 (it names the warm-up adk_setup runs)
    from engine.runtime.adk_setup import start_warm_up

    try:
        latest = db.escalations_of(run_id)[-1:]
    except DatabaseError:  # only the early start is lost: the turn warms ADK up when it comes
        return False
    if not latest or latest[0]["status"] == "pending":
        return False
    if (latest[0]["payload"].get("escalation") or {}).get("origin", "agent_text") not in _IN_AN_AGENT_CALL:
        return False
    if scripted:  # the run reads its script (rules.schema, pydantic) while the warm-up imports
        import rules.schema  # noqa: F401  pydantic too: imported here first, never by two threads at once
    start_warm_up()
    return True


class _Finished:
    def __init__(self, row: dict[str, Any]) -> None:
        import json

        self.result = json.loads(row["result"]) if row["result"] else None
        self.error = row["error"]
        self.exception = None


def _status(value: str) -> Any:
    from engine.runtime.engine import RunStatus

    return RunStatus(value)


def _rewrite_events(path: Path, earlier: list[dict[str, Any]]) -> None:
    """The events file gets the run's whole log: what was recorded before, then what follows.
    Checked as `run` checks it, before the run continues: it must take a write (/dev/full does
    not), and a FIFO nobody reads is refused instead of waited on."""
    import json

    from engine.runtime.events import open_for_append, prepare_events_file

    try:
        prepare_events_file(path)  # empties a regular file: this run's whole log follows
        with open_for_append(path) as out:
            for event in earlier:
                out.write(json.dumps(event, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise UsageError(f"--events {path}: cannot write: {exc.strerror or exc}") from None

