"""The history's audit: its filter words (`by:rule`, `rule:npm`, `via:batch`, `edited:yes`,
`agent:NAME`, `reason:NAME`, `tool:NAME`, then free text), the approval rate and median time to
decide per reason and per agent, and the export of what the filters match as JSON lines."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from rich.text import Text

from engine.escalation.audit import by_agent, by_reason, figures_by, json_lines
from engine.kernel.model import EscalationRecord
from tui.format import decision_summary, duration, one_line

KEYS = ("by", "rule", "via", "edited", "agent", "reason", "tool")
MAX_FIGURE_ROWS = 6  # per table: the most decided reasons and agents


def text_matches(record: EscalationRecord, text: str) -> bool:
    """Every `key:value` word must hold, and the other words, together, appear in one of the
    task, agent, reason, question, context, outcome, or the decision's rule, channel or note."""
    free: list[str] = []
    for word in text.lower().split():
        key, colon, value = word.partition(":")
        if colon and key in KEYS:
            if not _holds(record, key, value):
                return False
        else:
            free.append(word)
    if not free:
        return True
    esc, decision = record.pending.escalation, record.decision
    outcome = decision_summary(decision, esc) if decision is not None else record.state
    parts = [esc.task_id, esc.agent, esc.reason.value, esc.question, esc.context, outcome]
    if decision is not None:
        parts += [decision.audit.rule, decision.audit.via, decision.note]
    wanted = " ".join(free)
    return any(wanted in part.lower() for part in parts)  # each field on its own, as the placeholder says


def _holds(record: EscalationRecord, key: str, value: str) -> bool:
    esc, decision = record.pending.escalation, record.decision
    if key == "agent":
        return value in esc.agent.lower()
    if key == "reason":
        return value in esc.reason.value
    if key == "tool":
        return value in str(record.pending.extra.get("tool", "")).lower()
    if decision is None:
        return False
    if key == "by":
        return decision.resolved_by.value.startswith(value)
    if key == "rule":
        return bool(decision.audit.rule) and value in decision.audit.rule.lower()
    if key == "via":
        return value in decision.audit.via.lower()
    edited = decision.response.edited_args is not None
    return edited if value in ("yes", "y", "true", "1") else not edited


def figures_text(records: list[EscalationRecord]) -> Text:
    """Approval rate and median time to decide, per reason and per agent."""
    text = Text()
    for title, key in (("per reason", by_reason), ("per agent", by_agent)):
        rows = figures_by(records, key)
        text.append(f"Decisions {title} (those the filters match)\n", style="bold")
        if not rows:
            text.append("  none yet\n", style="dim")
        for row in rows[:MAX_FIGURE_ROWS]:
            wait = duration(row.median_seconds) if row.median_seconds is not None else "-"
            text.append(f"  {one_line(row.name, 40)}: {row.decided} decided, {row.rate:.0%} approved, median {wait}\n")
        if len(rows) > MAX_FIGURE_ROWS:
            text.append(f"  … {len(rows) - MAX_FIGURE_ROWS} more\n", style="dim")
    return text + Text("\n")


def export(records: Iterable[EscalationRecord], folder: Path | None = None) -> tuple[Path, int]:
    """Write the records as JSON lines (engine/escalation/audit.py's format, as `escalate runs
    --format json` gives them) to a new file in `folder`; returns its path and how many."""
    listed = list(records)
    stamp = datetime.fromtimestamp(time.time(), timezone.utc).strftime("%Y%m%d-%H%M%S")
    path = (folder or Path.cwd()) / f"escalate-history-{stamp}.jsonl"
    path.write_text(json_lines(listed), encoding="utf-8")
    return path, len(listed)
