"""What an ACP agent says it used, turned into the tokens a turn counts against the run's budget.

ACP has two sources. The prompt's reply may carry `usage` (unstable in the protocol: the turn's
tokens, `totalTokens`): when given, the turn counts exactly that. Otherwise the stable
`usage_update` notification says `used`, the tokens in the session's context (and `size`, the
window; `cost`, the session's cumulative cost): the turn counts the last `used` it reported,
which is what its last model call read and wrote, the same quantity an ADK model turn counts
(prompt plus reply tokens). It is a floor: the turn's earlier model calls are not reported. An
agent that reports neither counts nothing. The cost is logged, not counted (budgets are tokens).
"""

from __future__ import annotations

from typing import Any, Callable


class TurnUsage:
    """The usage one ACP agent reported during its current turn."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self._log = log
        self.used: int | None = None  # the last `used` of this turn
        self.size: int | None = None
        self.cost = ""

    def start_turn(self) -> None:
        self.used, self.size, self.cost = None, None, ""

    def update(self, update: Any) -> None:
        """A `usage_update` (the SDK checked `used` and `size` are integers >= 0)."""
        self.used, self.size = int(update.used), int(update.size)
        cost = update.cost
        if cost is not None:
            self.cost = f"{cost.amount:g} {str(cost.currency)[:8]}"

    def turn_tokens(self, said: int | None) -> int:
        """The tokens this turn counts: the reply's `usage`, else the last `used`, else 0."""
        tokens = said if said is not None else self.used
        if tokens is None:
            return 0
        cost = f"; session cost {self.cost}" if self.cost else ""
        window = f" ({self.used:,} of {self.size:,} in its context)" if self.used is not None and self.size else ""
        self._log(f"{tokens:,} tokens counted for this turn{window}{cost}")
        return max(0, int(tokens))
