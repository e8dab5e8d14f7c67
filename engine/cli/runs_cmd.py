"""`escalate runs`: the runs in the database (active, interrupted and waiting ones; `--all`:
finished too) with their pending escalations, as text or as the contract's JSON."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from typing import Any

from engine.cli.output import write_line
from engine.text_safety import visible


def main(args: argparse.Namespace) -> int:
    from engine.durable.database import DatabaseError
    from engine.durable.urls import shown
    from engine.services import open_database

    try:
        db = open_database(args.db, existing=True)
    except DatabaseError as exc:
        write_line(f"--db {exc}")
        return 2
    try:
        listed = describe_runs(db, include_finished=args.all, db_arg=args.db)
    except DatabaseError as exc:  # a lock another session holds (engine/durable/database.py)
        write_line(f"--db {shown(db.url)}: {exc}")
        return 2
    finally:
        db.close()
    if args.format == "json":
        sys.stdout.write(json.dumps(listed, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(_text(listed, args.db))
    return 0


def describe_runs(db: Any, *, include_finished: bool = False, now: float | None = None,
                  db_arg: str | None = None) -> list[dict[str, Any]]:
    """The contract's `[{run_id, task, workflow, status, started, pending: [...]}]`, plus
    `tokens`: the model tokens each run has used, each pending escalation's `options` (their
    ids), `labels` (theirs, in the same order), `recommended` (an id or null) and `answer` (the
    commands that decide it: one per option, in the same order), and `resume` for a run that no
    process runs. `db_arg`: the `--db` given, repeated in those commands."""
    from engine.cli.hints import answer_commands, resume_command
    from engine.durable.database import ACTIVE, PARKED, STALE_AFTER
    from engine.durable.decisions import pending_from_json

    now = now if now is not None else time.time()
    rows = db.list_runs(include_finished=include_finished)
    listed_ids = {r["run_id"] for r in rows}
    pending: dict[str, list[dict[str, Any]]] = {}
    # All pending ones, those of other runs left out here: naming thousands of runs in the query
    # costs more (each a parameter compiled) than reading the few rows of runs not listed.
    for esc in db.pending_escalations():
        if esc["run_id"] not in listed_ids:
            continue
        asked = pending_from_json(esc["payload"]).escalation
        pending.setdefault(esc["run_id"], []).append({
            "id": esc["id"], "reason": asked.reason.value, "question": asked.question,
            "deadline": _iso(esc["deadline"]) if esc["deadline"] is not None else None,
            "options": [o.id for o in asked.options], "labels": [o.label for o in asked.options],
            "recommended": asked.recommended.id if asked.recommended else None,
            "answer": answer_commands(esc["id"], asked.options, db_arg),
        })
    tokens = db.tokens_of(listed_ids)
    decided = _decided(db, listed_ids)
    listed = []
    for row in rows:
        status, asks = row["status"], pending.get(row["run_id"], [])
        if status == PARKED:  # no process holds it: its decision puts it back on the workers' queue
            status = "waiting"
        orphaned = row["status"] in ACTIVE and (row["heartbeat"] is None or row["heartbeat"] < now - STALE_AFTER)
        if orphaned:
            # Its process is gone (a headless run that exited 4 included): a run that waits for a
            # person says so; either way `escalate resume` or a console continues it.
            status = "waiting" if asks else "interrupted"
        listed.append({"run_id": row["run_id"], "task": row["task"], "workflow": row["workflow"], "status": status,
                       "started": _iso(row["started"]), "tokens": tokens.get(row["run_id"], 0),
                       "pending": asks, "decisions": decided.get(row["run_id"], []),
                       **({"resume": resume_command(row["run_id"], db_arg)} if orphaned else {})})
    return listed


def _decided(db: Any, run_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """Each run's decided and withdrawn escalations, with their audit (engine/escalation/audit.py)."""
    from engine.durable.history import load_records
    from engine.escalation.audit import audit_record

    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in load_records(db):
        if record.pending.escalation.run_id in run_ids:
            grouped.setdefault(record.pending.escalation.run_id, []).append(audit_record(record))
    return grouped


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _text(listed: list[dict[str, Any]], db_arg: str | None) -> str:
    """Each run on a line, its waiting escalations under it, each followed by the commands that
    answer it and then the one that continues the run, every command a whole line to paste."""
    from engine.cli.hints import answer_lines, pasteable, resume_command
    from engine.kernel.model import Option

    if not listed:
        return "no runs\n"
    lines = []
    for run in listed:
        used = f", {run['tokens']:,} tokens" if run["tokens"] else ""
        lines.append(f"{run['run_id']}  {run['status']:<11}  {run['task']}  ({run['workflow']}, started {run['started']}{used})")
        for esc in run["pending"]:
            deadline = f"until {esc['deadline']}" if esc["deadline"] else "waits for a human"
            lines.append(f"    {esc['id']}  {esc['reason']}  {deadline}: {esc['question']}")
            options = [Option(o, label, recommended=o == esc["recommended"]) for o, label in zip(esc["options"], esc["labels"])]
            resume = run["run_id"] if "resume" in run and esc is run["pending"][-1] else None
            lines.extend(f"      {line}" for line in answer_lines(esc["id"], options, db_arg, resume))
        if "resume" in run and not run["pending"]:
            lines.extend(f"      {line}" for line in pasteable([(resume_command(run["run_id"], db_arg), "continue the run")]))
    # Task names and questions are other people's text: no control character reaches the terminal.
    return "\n".join(visible(line) for line in lines) + "\n"
