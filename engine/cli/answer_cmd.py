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

from engine.cli.main import write_line
from engine.escalation.broker import APPROVE, DENY, EscalationError, RequestChanged, validate_response
from engine.escalation.edits import edited_args
from engine.kernel.model import Audit, Decision, Origin, ResolvedBy, Response, ResponseType, escalation_digest


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
            return _fail(f"{args.escalation}: --approve and --deny answer tool approvals only; use --option, --text, --skip or --agent-decide", 2)
        if args.args is not None:
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
        write_line(f"{args.escalation}: decided ({_words(response)})", sys.stdout)
        return 0
    except DatabaseError as exc:  # a lock another session holds (engine/durable/database.py)
        return _fail(f"--db {shown(db.url)}: {exc}", 2)
    finally:
        db.close()


def _response(args: argparse.Namespace, origin: Origin) -> Response | None:
    extra = args.instructions
    if args.approve or args.deny:
        if origin is not Origin.TOOL_APPROVAL:
            return None
        return Response(ResponseType.OPTION, selected_option=APPROVE if args.approve else DENY, additional_instructions=extra)
    if args.option is not None:
        return Response(ResponseType.OPTION, selected_option=args.option, additional_instructions=extra)
    if args.text is not None:
        return Response(ResponseType.TEXT, text_response=args.text, additional_instructions=extra)
    if args.skip:
        return Response(ResponseType.SKIP, additional_instructions=extra)
    return Response(ResponseType.AGENT_DECIDE, additional_instructions=extra)


def _words(response: Response) -> str:
    if response.response_type is ResponseType.OPTION:
        return f"option {response.selected_option}"
    return response.response_type.value.replace("_", " ")


def _by(resolved_by: str | None, decision: dict | None) -> str:
    """`human (alice@laptop (console))`: the kind of decider, and who it was when known."""
    if resolved_by is None:
        return "nobody (it was withdrawn)"
    person = (decision or {}).get("decidedBy")
    return f"{resolved_by} ({person})" if person else resolved_by


def _fail(message: str, code: int) -> int:
    write_line(message)
    return code
