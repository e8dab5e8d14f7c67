"""The history screen's numbers: human decisions from the session's records, and seed 002's
agent-to-agent metrics (per-agent success rate, recent escalations, loops denied) from the
engine's agent policy history."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from rich.text import Text

from engine.escalation.model import ResolvedBy
from tui.format import duration
from tui.session import EscalationRecord

RECENT_WINDOW = 3600.0  # seconds: "recent" in the metrics panel


def human_metrics(records: list[EscalationRecord]) -> Text:
    """Per agent: asked, answered by a human, settled by a default, median time to decide."""
    asked: Counter[str] = Counter()
    by_human: Counter[str] = Counter()
    by_default: Counter[str] = Counter()
    waits: dict[str, list[float]] = defaultdict(list)
    for record in records:
        agent = record.pending.escalation.agent
        asked[agent] += 1
        decision = record.decision
        if decision is None:
            continue
        if decision.resolved_by is ResolvedBy.HUMAN:
            by_human[agent] += 1
            waits[agent].append(decision.resolved_at - record.pending.escalation.created_at)
        else:
            by_default[agent] += 1
    text = Text().append("Human escalations\n", style="bold")
    if not asked:
        return text.append("  none yet\n", style="dim")
    for agent, count in asked.most_common():
        times = sorted(waits[agent])
        median = duration(times[len(times) // 2]) if times else "-"
        text.append(f"  {agent}: {count} asked, {by_human[agent]} by you, "
                    f"{by_default[agent]} by rule or timeout, median answer {median}\n")
    return text


def agent_metrics(handler: Any, now: float, window: float = RECENT_WINDOW) -> Text:
    """Seed 002: success rate per agent, recent escalations, loops denied, common paths."""
    text = Text().append("\nAgent-to-agent escalations\n", style="bold")
    if handler is None:
        return text.append("  the runtime is still loading\n", style="dim")
    from engine.escalation.agent_policy import Denial  # engine-only module, no ADK

    history = handler.history
    if not len(history):
        return text.append("  none yet\n", style="dim")
    recent = history.recent(window, now)
    denials = history.denials()
    text.append(f"  recent ({duration(window)}): {len(recent)}    all: {len(history)}    "
                f"loops denied: {denials.get(Denial.LOOP, 0)}    "
                f"other denials: {sum(denials.values()) - denials.get(Denial.LOOP, 0)}\n")
    for agent in history.agents():
        rate = history.success_rate(agent, None, now)
        text.append(f"  {agent}: success rate {rate:.0%} of {len(history.for_agent(agent))}\n")
    for (source, target), count in history.common_paths(3):
        text.append(f"  path {source} → {target}: {count}\n", style="dim")
    for entry in recent[-5:]:
        denial = getattr(entry.denial, "value", entry.denial) or "no reason"
        verdict = "approved" if entry.approved else f"denied ({denial})"
        text.append(f"  {duration(now - entry.timestamp)} ago {entry.source} → {entry.target or '?'} "
                    f"{verdict}: {entry.reason}\n", style="dim")
    return text


def metrics_text(policy: Any, records: list[EscalationRecord], now: float) -> Text:
    return human_metrics(records) + agent_metrics(policy, now)
