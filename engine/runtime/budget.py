"""A run's token budget (seed 004's `cost_warning`, "budget almost exhausted").

Every finished model turn counts its tokens (the provider's usage, or the script's `usage:`),
and every turn of an ACP agent the tokens it reported (engine/runtime/acp/usage.py).
Before the next turn, a run past `warnAt` of its budget asks: the runtime raises a
`cost_warning` escalation itself, through the one decision path (rules, then a person or their
stand-ins), with the options continue, stop and raise (the budget grows by one more budget). A
run at 100 % stops (exit 3) unless someone raised it.

The count is fed only by the turns the model wrappers hand to ADK, recorded or live: a durable
run that continues after a crash replays its recorded turns and so counts them again from zero,
to the same total, and reaches the same warning at the same step (its recorded decision).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from engine.escalation import protocol
from engine.kernel.model import Decision, Escalation, Option, Origin, Reason
from engine.kernel.responses import chosen_option, kind_of
from engine.flow.flow_api import StopTask
from rules.model import Budget

if TYPE_CHECKING:
    from engine.runtime.run_state import RunState

CONTINUE, STOP, RAISE = "continue", "stop", "raise"


def turn_tokens(response: Any) -> int:
    """The tokens one finished model turn used (0 for partial stream pieces)."""
    usage = getattr(response, "usage_metadata", None)
    if usage is None or getattr(response, "partial", False):
        return 0
    total = usage.total_token_count
    if total is None:
        total = (usage.prompt_token_count or 0) + (usage.candidates_token_count or 0)
    return max(0, int(total))


class RunBudget:
    def __init__(self, budget: Budget | None, on_count: Callable[[int], None] = lambda used: None) -> None:
        self.budget = budget
        self.used = 0
        self.limit = budget.tokens if budget is not None else None
        self._warned_at: int | None = None  # the limit a person was last asked about
        self._on_count = on_count
        self.notice = ""  # what the agents are told after a warning (appended to instructions)

    def count(self, response: Any) -> None:
        self.add(turn_tokens(response))

    def add(self, tokens: int) -> None:
        """Count a turn's tokens (an ADK model turn's, an ACP agent's turn: acp/usage.py)."""
        if tokens > 0:
            self.used += tokens
            self._on_count(self.used)

    async def before_turn(self, run: "RunState", agent: str) -> None:
        """Ask once per limit when past warnAt; stop at 100 %."""
        if self.budget is None or self.limit is None:
            return
        if self.used >= self.budget.warn_at * self.limit and self._warned_at != self.limit:
            self._warned_at = self.limit  # parallel branches ask once
            escalation = self._escalation(run, agent)
            self._apply(escalation, await run.decide(escalation))
        if self.used >= self.limit:
            raise StopTask(f"token budget used up: {self.used:,} of {self.limit:,} tokens ({self.budget.source} in the rules)")

    def _escalation(self, run: "RunState", agent: str) -> Escalation:
        assert self.budget is not None and self.limit is not None
        share = 100 * self.used // self.limit
        step = self.budget.tokens
        return Escalation(
            id="", task_id=run.task, run_id=run.run_id, agent=agent, reason=Reason.COST_WARNING,
            question=f"Token budget almost used up: {self.used:,} of {self.limit:,} tokens ({share} %). Go on?",
            context=(f"{self.budget.source} in the rules: warn at {self.budget.warn_at:.0%}, stop at 100 %. "
                     f"Raising adds {step:,} tokens."),
            options=(
                Option(CONTINUE, "Continue (the run stops at 100 %)", recommended=True),
                Option(STOP, "Stop the run now"),
                Option(RAISE, f"Raise the budget by {step:,} tokens"),
            ),
            origin=Origin.BUDGET,
        )

    def _apply(self, escalation: Escalation, decision: Decision) -> None:
        """`run.decide` has already stopped the task for a stopping decision (rule, default)."""
        assert self.budget is not None and self.limit is not None
        response = decision.response
        chosen = chosen_option(response)
        if chosen == STOP or kind_of(response, escalation.origin).stops:
            raise StopTask(f"token budget: stopped by {decision.resolved_by.value} at {self.used:,} of {self.limit:,} tokens")
        if chosen == RAISE:
            self.limit += self.budget.tokens
        self.notice = (f"Token budget: {self.used:,} of {self.limit:,} tokens used so far in this run; at 100 % the run "
                       f"stops. Be economical.\n{protocol.decision_message(escalation, decision)}")
