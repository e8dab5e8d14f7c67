"""The history screen's numbers: human decisions from the session's records, seed 002's
agent-to-agent metrics (per-agent success rate, recent escalations, loops denied) from the
engine's agent policy history, and runs; earlier sessions (the store) included."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from rich.text import Text

from engine.kernel.model import EscalationRecord, ResolvedBy
from engine.escalation.store import StoredRun
from tui.format import duration, one_line

RECENT_WINDOW = 3600.0  # seconds: "recent" in the metrics panel


@dataclass
class HumanTally:
    """Per agent: asked, answered by a human, settled by a default, and the human's answer times.
    Tallies add up, so an earlier sessions' tally is counted once and reused."""

    asked: Counter[str] = field(default_factory=Counter)
    by_human: Counter[str] = field(default_factory=Counter)
    by_default: Counter[str] = field(default_factory=Counter)
    waits: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def of(cls, records: Iterable[EscalationRecord]) -> "HumanTally":
        tally = cls()
        for record in records:
            agent = record.pending.escalation.agent
            tally.asked[agent] += 1
            decision = record.decision
            if decision is None:
                continue
            if decision.resolved_by is ResolvedBy.HUMAN:
                tally.by_human[agent] += 1
                tally.waits[agent].append(decision.resolved_at - record.pending.escalation.created_at)
            else:
                tally.by_default[agent] += 1
        return tally

    def __add__(self, other: "HumanTally") -> "HumanTally":
        waits: dict[str, list[float]] = defaultdict(list)
        for source in (self.waits, other.waits):
            for agent, times in source.items():
                waits[agent].extend(times)
        return HumanTally(self.asked + other.asked, self.by_human + other.by_human,
                          self.by_default + other.by_default, waits)


def human_metrics(tally: HumanTally) -> Text:
    """Per agent: asked, answered by a human, settled by a default, median time to decide."""
    text = Text().append("Human escalations\n", style="bold")
    if not tally.asked:
        return text.append("  none yet\n", style="dim")
    for agent, count in tally.asked.most_common():
        times = sorted(tally.waits.get(agent, ()))
        median = duration(times[len(times) // 2]) if times else "-"
        text.append(f"  {_name(agent)}: {count} asked, {tally.by_human[agent]} by you, "
                    f"{tally.by_default[agent]} by rule or timeout, median answer {median}\n")
    return text


def agent_metrics(history: Any, now: float, window: float = RECENT_WINDOW) -> Text:
    """Seed 002: success rate per agent, recent escalations, loops denied, common paths, from
    the engine's EscalationHistory (earlier sessions' entries included when there is a store)."""
    text = Text().append("\nAgent-to-agent escalations\n", style="bold")
    if history is None:
        return text.append("  the runtime is still loading\n", style="dim")
    from engine.escalation.agent_policy import Denial  # engine-only module, no ADK

    if not len(history):
        return text.append("  none yet\n", style="dim")
    recent = history.recent(window, now)
    denials = history.denials()
    text.append(f"  recent ({duration(window)}): {len(recent)}    all: {len(history)}    "
                f"loops denied: {denials.get(Denial.LOOP, 0)}    "
                f"other denials: {sum(denials.values()) - denials.get(Denial.LOOP, 0)}\n")
    for agent in history.agents():
        rate = history.success_rate(agent, None, now)
        text.append(f"  {_name(agent)}: success rate {rate:.0%} of {len(history.for_agent(agent))}\n")
    for (source, target), count in history.common_paths(3):
        text.append(f"  path {_name(source)} → {_name(target)}: {count}\n", style="dim")
    latest = recent[-5:] or history.entries_since(max(0, len(history) - 5))  # none recent: the last ones
    for entry in latest:
        verdict = "approved" if entry.approved else f"denied ({_name(entry.denial or 'no reason')})"
        text.append(f"  {ago(now - entry.timestamp)} {_name(entry.source)} → {_name(entry.target or '?')} "
                    f"{verdict}: {one_line(entry.reason, 120)}\n", style="dim")
    return text


def run_metrics(runs: list[Any], earlier: list[StoredRun]) -> Text:
    """Runs of this session and of earlier ones (from the store), by final status."""
    text = Text().append("\nRuns\n", style="bold")
    finished = Counter(getattr(r.status, "value", str(r.status)) for r in runs)
    text.append(f"  this session: {len(runs)}" + _counts(finished) + "\n")
    if earlier:
        text.append(f"  earlier sessions: {len(earlier)}" + _counts(Counter(r.status for r in earlier)) + "\n")
        for run in earlier[-3:][::-1]:
            outcome = one_line(run.result, 50) if run.result is not None else (run.error or "")
            text.append(f"  {_name(run.workflow)} {_name(run.status)}: {one_line(outcome, 60)}\n", style="dim")
    return text


def _counts(counter: Counter[str]) -> str:
    return f" ({', '.join(f'{n} {_name(status)}' for status, n in counter.most_common())})" if counter else ""


def _name(value: str) -> str:
    """An agent, workflow or status name: from a workflow, an agent's hand-off or a store file."""
    return one_line(value, 60)


def ago(seconds: float) -> str:
    """`42s ago`, `3:07 ago`, `5h ago`, `3d ago`: an age that stays short over days."""
    if seconds < 3600:
        return f"{duration(seconds)} ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)}h ago"
    return f"{int(seconds // 86400)}d ago"


def metrics_text(history: Any, tally: HumanTally, now: float, runs: Sequence[Any] = (),
                 earlier_runs: Sequence[StoredRun] = ()) -> Text:
    return human_metrics(tally) + agent_metrics(history, now) + run_metrics(list(runs), list(earlier_runs))
