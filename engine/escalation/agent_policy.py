"""Agent-to-agent escalation (seed 002): policy, handler and an indexed, thread-safe history.

An agent that cannot do a task well hands it to a more specialised one through
`escalate_to_agent`. The handler checks the allowed paths, chooses the target (the suggestion,
else the policy's keyword hints, else the first allowed), refuses chains deeper than maxDepth
and loops (A->B->A, A->B->C->A) within the loop window, and records every decision.

No query scans the whole history: loops look at the last approval time of each edge, recent
escalations and success rates bisect per-agent timestamp arrays.
"""

from __future__ import annotations

import re
import threading
from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Collection, Iterable, NamedTuple

from engine.kernel.clock import Clock, RealClock
from rules.model import PolicyConfig


class Denial(str, Enum):
    INVALID = "invalid"
    NOT_ALLOWED = "not_allowed"
    NO_TARGET = "no_target"
    LOOP = "loop"
    DEPTH = "depth"


@dataclass(frozen=True, slots=True)
class AgentEscalationRequest:
    source_agent: str
    reason: str
    task: str
    suggested_target: str = ""
    # The agents whose escalations led to `source_agent` in this request chain, oldest first
    # (empty for an agent that was not itself reached by escalation).
    chain: tuple[str, ...] = ()


class AgentEscalationResponse(NamedTuple):  # immutable and cheap to build (hot path)
    approved: bool
    target_agent: str
    task: str
    reason: str  # why approved or denied, for the agent and the event
    fallbacks: tuple[str, ...] = ()
    denial: Denial | None = None

    @classmethod
    def from_json(cls, fields: Any) -> "AgentEscalationResponse":
        """Back from a recorded step's JSON (its fields in order, as `json_value` lists them)."""
        approved, target, task, reason, fallbacks, denial = fields
        return cls(bool(approved), str(target), str(task), str(reason), tuple(fallbacks),
                   Denial(denial) if denial is not None else None)

    def to_event_fields(self, source: str) -> dict[str, Any]:
        """The contract's `agent_escalation` event fields."""
        return {
            "source": source,
            "target": self.target_agent,
            "approved": self.approved,
            "reason": self.reason,
            "fallbacks": list(self.fallbacks),
        }


_SEPARATORS = re.compile(r"[\s_\-]+")


@lru_cache(maxsize=4096)  # a handful of agent names, asked about on every request
def agent_key(name: str) -> str:
    """Agent names compare with case, `_` and `-` ignored (seed 002 spells them with `-`)."""
    return _SEPARATORS.sub("_", name.strip().lower())


class AgentPolicy:
    """Who may escalate to whom, fallbacks, depth limit, loop window and target hints."""

    def __init__(
        self,
        paths: dict[str, Iterable[str]] | None = None,
        fallbacks: dict[str, Iterable[str]] | None = None,
        max_depth: int = 3,
        loop_window: float = 300.0,
        target_hints: dict[str, str] | None = None,
    ) -> None:
        self._paths: dict[str, tuple[str, ...]] = {}
        self._allowed: dict[str, frozenset[str]] = {}  # source key -> target keys
        self._fallbacks: dict[str, tuple[str, ...]] = {}
        self._names: dict[str, str] = {}  # key -> name as configured
        for source, targets in (paths or {}).items():
            self.add_path(source, targets)
        for agent, alternatives in (fallbacks or {}).items():
            self.add_fallback(agent, alternatives)
        self.max_depth = max_depth
        self.loop_window = loop_window
        self.target_hints = dict(target_hints or {})

    @classmethod
    def from_config(cls, config: PolicyConfig) -> "AgentPolicy":
        return cls(config.paths, config.fallbacks, config.max_depth, config.loop_window, config.target_hints)

    def add_path(self, source: str, targets: Iterable[str]) -> None:
        targets = tuple(self._remember(t) for t in targets)
        self._paths[agent_key(source)] = targets
        self._allowed[agent_key(source)] = frozenset(agent_key(t) for t in targets)
        self._remember(source)

    def add_fallback(self, agent: str, fallbacks: Iterable[str]) -> None:
        self._fallbacks[agent_key(agent)] = tuple(self._remember(f) for f in fallbacks)

    def set_max_depth(self, depth: int) -> None:
        if depth < 1:
            raise ValueError("maxDepth must be at least 1")
        self.max_depth = depth

    def is_source(self, agent: str) -> bool:
        return bool(self._paths.get(agent_key(agent)))

    def allowed_targets(self, source: str) -> tuple[str, ...]:
        return self._paths.get(agent_key(source), ())

    def allow_escalation(self, source: str, target: str) -> bool:
        return agent_key(target) in self._allowed.get(agent_key(source), ())

    def get_fallbacks(self, agent: str) -> tuple[str, ...]:
        return self._fallbacks.get(agent_key(agent), ())

    def determine_target(self, source: str, text: str, available: Collection[str] | None = None) -> str | None:
        """The first hint keyword found in `text` whose agent the source may reach, else the
        first allowed target, else None. `available` (agent names) limits the candidates."""
        allowed = self.allowed_targets(source)
        allowed_keys = self._allowed.get(agent_key(source), frozenset())
        if available is not None:
            present = {agent_key(a) for a in available}
            allowed = tuple(t for t in allowed if agent_key(t) in present)
            allowed_keys = allowed_keys & present
        lowered = text.lower()
        for keyword, target in self.target_hints.items():
            if keyword.lower() in lowered and agent_key(target) in allowed_keys:
                return self.canonical(target)
        return allowed[0] if allowed else None

    def canonical(self, name: str) -> str:
        """The name as the policy spells it (so `codebase-analyzer` finds `codebase_analyzer`)."""
        return self._names.get(agent_key(name), name)

    def _remember(self, name: str) -> str:
        self._names.setdefault(agent_key(name), name)
        return name


class HistoryEntry(NamedTuple):  # a tuple: cheap to build and small (memory per entry counts)
    timestamp: float
    source: str
    target: str
    approved: bool
    reason: str
    task: str
    denial: str | None  # a Denial value as a plain str: keeps the tuple free of GC tracking


class _AgentIndex:
    """One agent's escalations as source: entries, their times, and approvals so far."""

    __slots__ = ("entries", "times", "approved_before")

    def __init__(self) -> None:
        self.entries: list[HistoryEntry] = []
        self.times = array("d")
        self.approved_before = array("q", [0])  # approvals among entries[:i]

    def add(self, entry: HistoryEntry) -> None:
        self.entries.append(entry)
        self.times.append(entry.timestamp)
        self.approved_before.append(self.approved_before[-1] + int(entry.approved))


class EscalationHistory:
    """Every decision, indexed for the questions the handler and the console ask. One lock
    guards it all; `*_locked` methods are for a caller that already holds `lock`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        with self.lock:
            self._reset_locked()

    def _reset_locked(self) -> None:
        self._entries: list[HistoryEntry] = []
        self._times = array("d")
        self._by_agent: dict[str, _AgentIndex] = {}
        self._last_edge: dict[str, dict[str, float]] = {}  # source -> target -> last approval
        self._paths: Counter[tuple[str, str]] = Counter()
        self._denials: Counter[Denial] = Counter()

    def record(self, request: AgentEscalationRequest, response: AgentEscalationResponse, timestamp: float) -> HistoryEntry:
        with self.lock:
            return self.record_locked(request, response, timestamp)

    def record_locked(
        self, request: AgentEscalationRequest, response: AgentEscalationResponse, timestamp: float
    ) -> HistoryEntry:
        return self._add_locked(HistoryEntry(
            timestamp, request.source_agent, response.target_agent, response.approved,
            request.reason, request.task, response.denial.value if response.denial else None,
        ))

    def _add_locked(self, entry: HistoryEntry) -> HistoryEntry:
        if self._times and entry.timestamp < self._times[-1]:
            entry = entry._replace(timestamp=self._times[-1])  # keep the arrays sorted even if a clock stepped back
        timestamp = entry.timestamp
        self._entries.append(entry)
        self._times.append(timestamp)
        source = agent_key(entry.source)
        index = self._by_agent.get(source)
        if index is None:
            index = self._by_agent[source] = _AgentIndex()
        index.add(entry)
        if entry.approved:
            edges = self._last_edge.get(source)
            if edges is None:
                edges = self._last_edge[source] = {}
            edges[agent_key(entry.target)] = timestamp
            self._paths[(entry.source, entry.target)] += 1
        elif entry.denial is not None:
            self._denials[Denial(entry.denial)] += 1
        return entry

    def add_earlier(self, entries: Iterable[HistoryEntry]) -> int:
        """Put entries of earlier sessions (oldest first, on this history's clock) before the
        ones recorded so far, as if they had been recorded first; returns how many. Loop
        detection sees them like any other: only those within the loop window count."""
        with self.lock:
            current = self._entries
            self._reset_locked()
            added = 0
            for entry in entries:
                self._add_locked(entry)
                added += 1
            for entry in current:
                self._add_locked(entry)
            return added

    def entries_since(self, start: int) -> list[HistoryEntry]:
        """The entries from position `start` on, in the order recorded (a reader's cursor)."""
        with self.lock:
            return self._entries[start:]

    def has_loop(self, source: str, target: str, now: float, window: float, max_hops: int) -> bool:
        with self.lock:
            return self.has_loop_locked(source, target, now, window, max_hops)

    def has_loop_locked(self, source: str, target: str, now: float, window: float, max_hops: int) -> bool:
        """Would source->target close a cycle of approvals made within the window? Direct
        (target->source) or through a chain of at most `max_hops` edges (target->...->source)."""
        start, goal, cutoff = agent_key(target), agent_key(source), now - window
        if start == goal:
            return True
        seen = {start}
        frontier = [start]
        for _ in range(max_hops):  # breadth-first over recent edges: never over the history
            nxt: list[str] = []
            for node in frontier:
                for dst, when in self._last_edge.get(node, {}).items():
                    if when < cutoff or dst in seen:
                        continue
                    if dst == goal:
                        return True
                    seen.add(dst)
                    nxt.append(dst)
            if not nxt:
                break
            frontier = nxt
        return False

    def recent(self, window: float, now: float) -> list[HistoryEntry]:
        with self.lock:
            return self._entries[bisect_left(self._times, now - window) :]

    def for_agent(self, agent: str) -> list[HistoryEntry]:
        with self.lock:
            index = self._by_agent.get(agent_key(agent))
            return list(index.entries) if index else []

    def success_rate(self, agent: str, window: float | None, now: float) -> float:
        """Approved / attempted for escalations by `agent` within the window (0.0 when none)."""
        with self.lock:
            index = self._by_agent.get(agent_key(agent))
            if index is None:
                return 0.0
            start = 0 if window is None else bisect_left(index.times, now - window)
            total = len(index.times) - start
            if total == 0:
                return 0.0
            return (index.approved_before[-1] - index.approved_before[start]) / total

    def agents(self) -> list[str]:
        """Agents that escalated, as first spelled."""
        with self.lock:
            return [index.entries[0].source for index in self._by_agent.values()]

    def denials(self) -> dict[Denial, int]:
        with self.lock:
            return dict(self._denials)

    def common_paths(self, n: int = 5) -> list[tuple[tuple[str, str], int]]:
        with self.lock:
            return self._paths.most_common(n)

    def __len__(self) -> int:
        return len(self._entries)


class AgentEscalationHandler:
    def __init__(self, policy: AgentPolicy | PolicyConfig | None = None, clock: Clock | None = None) -> None:
        if isinstance(policy, PolicyConfig):
            policy = AgentPolicy.from_config(policy)
        self._policy = policy or AgentPolicy()
        self.clock = clock or RealClock()
        self.history = EscalationHistory()

    @property
    def policy(self) -> AgentPolicy:
        return self._policy

    def set_policy(self, policy: AgentPolicy) -> None:
        self._policy = policy

    def handle(self, request: AgentEscalationRequest, available: Collection[str] | None = None) -> AgentEscalationResponse:
        """Decide and record one request. `available`: the agents that exist where the request
        runs (a workflow's agents); targets outside it are never chosen."""
        if not request.source_agent.strip():
            raise ValueError("an agent escalation needs a source agent")
        with self.history.lock:  # one decision at a time: check-then-record is atomic
            now = self.clock.now()
            response = self._decide(request, now, available)
            self.history.record_locked(request, response, now)
            return response

    def _decide(self, req: AgentEscalationRequest, now: float, available: Collection[str] | None) -> AgentEscalationResponse:
        policy = self._policy
        source = req.source_agent
        if not req.task.strip():
            return self._deny(req, Denial.INVALID, "an escalation needs a task for the other agent")
        allowed = policy.allowed_targets(source)
        if not allowed:
            return self._deny(req, Denial.NOT_ALLOWED, f"{source} has no escalation paths")
        suggested = req.suggested_target.strip()
        if suggested:
            target = policy.canonical(suggested)
            if not policy.allow_escalation(source, target):
                why = f"{source} may not escalate to {target} (allowed: {', '.join(allowed)})"
                return self._deny(req, Denial.NOT_ALLOWED, why, target)
            if available is not None and agent_key(target) not in {agent_key(a) for a in available}:
                return self._deny(req, Denial.NO_TARGET, f"there is no agent named {target} here", target)
        else:
            target = policy.determine_target(source, f"{req.reason} {req.task}", available) or ""
            if not target:
                why = f"none of {source}'s allowed targets ({', '.join(allowed)}) is here"
                return self._deny(req, Denial.NO_TARGET, why)
        depth = len(req.chain) + 1
        if depth > policy.max_depth:
            why = f"escalation chain too deep ({depth} > maxDepth {policy.max_depth})"
            return self._deny(req, Denial.DEPTH, why, target)
        target_key = agent_key(target)
        if target_key == agent_key(source) or any(agent_key(a) == target_key for a in req.chain):
            return self._deny(req, Denial.LOOP, f"escalation loop: {target} is already in this escalation chain", target)
        if self.history.has_loop_locked(source, target, now, policy.loop_window, max(2, policy.max_depth)):
            why = (
                f"escalation loop: {target} escalated to {source} (directly or through others) "
                f"in the last {policy.loop_window:g} s"
            )
            return self._deny(req, Denial.LOOP, why, target)
        source_key = agent_key(source)
        fallbacks = tuple(f for f in policy.get_fallbacks(target) if agent_key(f) != source_key)
        return AgentEscalationResponse(True, target, req.task, f"approved: {source} -> {target}", fallbacks)

    def _deny(self, req: AgentEscalationRequest, kind: Denial, why: str, target: str = "") -> AgentEscalationResponse:
        """A refusal; its fallbacks are the target's (or the source's), minus the agents involved."""
        source = req.source_agent
        alternatives = self._policy.get_fallbacks(target or source)
        involved = (agent_key(source), agent_key(target))
        fallbacks = tuple(f for f in alternatives if agent_key(f) not in involved)
        return AgentEscalationResponse(False, target, req.task, why, fallbacks, kind)
