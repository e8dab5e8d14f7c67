"""`escalate answer ESC_ID ...`: decide a pending escalation from the shell (`resolvedBy: human`).

The decision is written to the database by a conditional update: the first decision for an
escalation wins, wherever it comes from; a later one is refused naming who decided. The process
running the waiting agent finds the decision within a poll (engine/escalation/broker.py).
Exit codes: 0 decided, 1 unknown, already decided or changed meanwhile, 2 usage.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from engine.cli.output import write_line
from engine.escalation.broker import EscalationError, RequestChanged, validate_response
from engine.kernel.model import Audit, Decision, Origin, ResolvedBy, Response, escalation_digest
from engine.kernel.responses import kind_of, kinds


def main(args: argparse.Namespace) -> int:
    from engine.durable.database import DatabaseError
    from engine.durable.decisions import DecisionStore, decision_to_json, pending_from_json, who
    from engine.durable.urls import shown
    from engine.services import open_database

    try:
        db = open_database(args.db, existing=True)  # a mistyped --db is refused, never created empty
    except DatabaseError as exc:
        return _fail(f"--db {exc}", 2)
    try:
        row = db.get_escalation(args.escalation)
        if row is None:
            return _fail(f"{args.escalation}: no such escalation in {db.url}", 1)
        pending = pending_from_json(row["payload"])
        if row["status"] != "pending":
            return _fail(f"{args.escalation}: already decided by {_by(row['resolved_by'], row['decision'])}", 1)
        if args.args is not None and not args.approve:
            return _fail(f"{args.escalation}: --args goes with --approve (the tool runs with the edited arguments)", 2)
        response = _response(args, pending.escalation.origin)
        if response is None:
            return _fail(f"{args.escalation}: {_either(True, ' and ')} answer tool approvals only; use {_either(False, ' or ')}", 2)
        if args.args is not None:
            from engine.runtime.tools.edits import edited_args  # only for --args: the tools' registry

            edited = edited_args(args.args, str(pending.extra.get("tool", "")))
            if isinstance(edited, str):
                return _fail(f"{args.escalation}: --args: {edited}", 2)
            response = replace(response, edited_args=edited)
        try:
            validate_response(pending, response)
        except EscalationError as exc:
            return _fail(str(exc), 2)
        decision = Decision(args.escalation, response, ResolvedBy.HUMAN, time.time(), audit=Audit(via="escalate answer"),
                            decided_by=who("escalate answer"), digest=escalation_digest(pending))
        try:
            held = DecisionStore(db).decide(decision)
        except RequestChanged:
            return _fail(f"{args.escalation}: the request changed since it was read: nothing was decided; "
                         "look at it again (escalate runs) and answer again", 1)
        if held is not decision:
            if held is None:
                return _fail(f"{args.escalation}: already decided by nobody (it was withdrawn)", 1)
            return _fail(f"{args.escalation}: already decided by {_by(held.resolved_by.value, decision_to_json(held))}", 1)
        write_line(f"{args.escalation}: decided ({_words(response, pending.escalation.origin)})", sys.stdout)
        return 0
    except DatabaseError as exc:  # a lock another session holds (engine/durable/database.py)
        return _fail(f"--db {shown(db.url)}: {exc}", 2)
    finally:
        db.close()


def _response(args: argparse.Namespace, origin: Origin) -> Response | None:
    """The answer the one given flag stands for; None for a tool approval's flag on another
    escalation. The flags are mutually exclusive and one is required (engine/cli/main.py)."""
    kind = next(k for k in kinds() if getattr(args, k.name) not in (None, False))
    if kind.tool_approval_only and origin is not Origin.TOOL_APPROVAL:
        return None
    return kind.make(getattr(args, kind.name) if kind.metavar is not None else None, args.instructions)


def _either(tool_approval_only: bool, last: str) -> str:
    """`--option, --text, --skip or --agent-decide`: the flags of one side, in words."""
    flags = [k.flag for k in kinds() if k.tool_approval_only is tool_approval_only]
    return ", ".join(flags[:-1]) + last + flags[-1] if len(flags) > 1 else "".join(flags)


def _words(response: Response, origin: Origin) -> str:
    return kind_of(response, origin).said(response)


def _by(resolved_by: str | None, decision: dict | None) -> str:
    """`human (alice@laptop (console))`: the kind of decider, and who it was when known."""
    if resolved_by is None:
        return "nobody (it was withdrawn)"
    person = (decision or {}).get("decidedBy")
    return f"{resolved_by} ({person})" if person else resolved_by


def _fail(message: str, code: int) -> int:
    write_line(message)
    return code
