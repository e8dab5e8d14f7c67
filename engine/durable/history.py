"""History as queries on the database: what earlier sessions decided and ran, for the console's
history screen, its metrics and seed 002's success rates; and the one-time import of a `--store`
JSON-lines file (the history format before the database)."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Callable

from engine.durable.database import Database
from engine.durable.decisions import decision_from_json, decision_to_json, pending_from_json, pending_to_json
from engine.escalation.agent_policy import EscalationHistory, HistoryEntry
from engine.kernel.model import EscalationRecord
from engine.escalation.store import StoreContents, StoredRun, summary
from engine.text_safety import utf8_text


def load_records(db: Database) -> list[EscalationRecord]:
    """Every decided or withdrawn escalation in the database, oldest first, marked `earlier`."""
    records = []
    for row in db.past_escalations():
        decision = decision_from_json(row["id"], row["decision"]) if row["decision"] else None
        records.append(EscalationRecord(pending_from_json(row["payload"]), decision,
                                        withdrawn=decision is None, earlier=True))
    return records


def load_earlier(db: Database) -> StoreContents:
    """Everything finished in the database, marked `earlier` (times are wall-clock seconds, as
    a durable console's clock)."""
    records = load_records(db)
    runs = [
        StoredRun(r["run_id"], r["task"], r["workflow"], r["flow"], r["input"], r["status"], _summary(r["result"]),
                  r["error"], r["started"], r["finished"] or r["started"])
        # Not the parked and queued ones (unfinished, and thousands of them with issue 26's workers).
        for r in db.list_runs(include_finished=True, parked=False, queued=False) if r["status"] not in ("running", "waiting")
    ]
    entries = [HistoryEntry(*row) for row in db.agent_entries()]
    return StoreContents(records, entries, runs)


def _summary(result: str | None) -> str | None:
    return summary(json.loads(result)) if result else None


class AgentHistoryRecorder:
    """Writes the engine's new agent-to-agent history entries to the database as they happen."""

    def __init__(self, db: Database, history: EscalationHistory) -> None:
        self.db = db
        self.history = history
        self._cursor = len(history)  # entries already there came from the database
        self._lock = threading.Lock()

    def follow(self, engine: Any) -> Callable[[], None]:
        def on_event(event: Any) -> None:
            if event.type == "agent_escalation":
                self._drain()

        return engine.subscribe(on_event)

    def _drain(self) -> None:
        with self._lock:
            new = self.history.entries_since(self._cursor)
            self._cursor += len(new)
        self.db.add_agent_entries(new)


def import_store(db: Database, path: Path) -> tuple[int, int] | None:
    """Copy a `--store` file's escalations, decisions, runs and hand-offs into the database, once
    per file (by its resolved path); returns (escalations, runs) imported, None when it already
    was. Raises StoreError for a broken file (nothing is imported then)."""
    from engine.escalation.store import read_store

    resolved = str(path.resolve())
    contents = read_store(path)
    if not db.claim_import(resolved):
        return None
    # Ids in a store are unique within one of its sessions only: imported ones get a prefix.
    prefix = "imp" + hashlib.sha1(resolved.encode()).hexdigest()[:6]
    run_rows = [dict(run_id=f"{prefix}-{n:06d}-{r.id}", task=r.task, workflow=r.workflow, path=resolved, flow=r.flow,
                     input=r.input, status=r.status, result=json.dumps(r.result) if r.result is not None else None,
                     error=r.error, started=r.started_at, finished=r.finished_at, workspace="")
                for n, r in enumerate(contents.runs)]
    escalation_rows = []
    for n, record in enumerate(contents.escalations):
        pending = record.pending
        esc_id = f"{prefix}-{n:06d}-{pending.escalation.id}"
        payload = pending_to_json(pending)
        payload["escalation"]["id"] = esc_id
        decision = record.decision
        escalation_rows.append(dict(
            id=utf8_text(esc_id), run_id=utf8_text(f"{prefix}-{pending.escalation.run_id}"), created=pending.escalation.created_at,
            deadline=pending.policy.deadline, payload=json.dumps(payload),
            status="decided" if decision else "withdrawn",
            decision=json.dumps(decision_to_json(decision)) if decision else None,
            resolved_by=decision.resolved_by.value if decision else None,
            decided_at=decision.resolved_at if decision else None))
    db.import_history(run_rows, escalation_rows)
    db.add_agent_entries(contents.agent_entries)
    return len(escalation_rows), len(run_rows)
