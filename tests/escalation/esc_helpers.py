"""Builders shared by the escalation tests (a module, not a conftest: test dirs have no
__init__.py and must not collide with other folders' helpers)."""

from __future__ import annotations

import itertools

from engine.kernel.model import (
    Escalation,
    OnTimeout,
    Option,
    Origin,
    PendingEscalation,
    Reason,
    TimeoutPolicy,
)

_ids = itertools.count(1)

OPTIONS = (
    Option("opt1", "Yes, use JWT", recommended=True),
    Option("opt2", "No, keep sessions"),
)


def make_escalation(
    *,
    id: str | None = None,
    run_id: str = "run1",
    task: str = "task",
    agent: str = "peer1",
    reason: Reason = Reason.ARCHITECTURE_DECISION,
    question: str = "Use JWT instead of sessions?",
    context: str = "Touches src/api/auth.ts",
    options: tuple[Option, ...] = OPTIONS,
    allow_agent_decision: bool = False,
    timeout: float | None = None,
    origin: Origin = Origin.AGENT_TEXT,
) -> Escalation:
    return Escalation(
        id=id or f"esc{next(_ids)}",
        task_id=task,
        run_id=run_id,
        agent=agent,
        reason=reason,
        question=question,
        context=context,
        options=options,
        allow_agent_decision=allow_agent_decision,
        timeout=timeout,
        origin=origin,
    )


def make_pending(
    escalation: Escalation | None = None,
    *,
    deadline: float | None = None,
    on_timeout: OnTimeout = OnTimeout.WAIT,
    option_id: str | None = None,
    **kw: object,
) -> PendingEscalation:
    esc = escalation or make_escalation(**kw)  # type: ignore[arg-type]
    seconds = None if deadline is None else deadline
    return PendingEscalation(esc, TimeoutPolicy(deadline, on_timeout, option_id, seconds))
