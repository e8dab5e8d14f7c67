"""Answering escalations without a human: the `--answers` file, then the timeout defaults.

The n-th human escalation of a run gets the n-th answer (resolvedBy answers_file). Once they
are used up, an escalation with a deadline resolves at once as if the deadline had passed, a
tool approval is denied at once, and one that waits for a human marks the run as waiting (the
runner then exits 4 naming it).
"""

from __future__ import annotations

from typing import Callable, Sequence

from engine.escalation.answers import Answer
from engine.escalation.broker import (
    RAISED,
    BrokerEvent,
    EscalationBroker,
    EscalationError,
    InvalidResponse,
    NoTimeoutDefault,
)
from engine.kernel.model import Audit, PendingEscalation, ResolvedBy


class AnswerMismatch(EscalationError):
    """An answers-file entry that cannot answer the escalation it fell on."""


def waiting_message(pending: PendingEscalation) -> str:
    esc = pending.escalation
    return (
        f"waiting on a human: escalation {esc.id} ({esc.reason.value}) from agent {esc.agent or '-'} "
        f"in task {esc.task_id}: {esc.question}"
    )


class HeadlessResponder:
    def __init__(
        self,
        broker: EscalationBroker,
        answers: Sequence[Answer] = (),
        on_waiting: Callable[[PendingEscalation], None] | None = None,
        *,
        wait: bool = False,
    ) -> None:
        """`wait` (`run --wait`): once the answers are used up, an escalation is left to a person
        (a console, `escalate answer`) until its deadline, as in the console, instead of taking
        its default at once."""
        self.broker = broker
        self.wait = wait
        self.answers = list(answers)
        self.waiting: list[PendingEscalation] = []
        self._on_waiting = on_waiting
        self._used: dict[str, int] = {}  # run id -> answers used
        self._unsubscribe = broker.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, event: BrokerEvent) -> None:
        if event.kind != RAISED:
            return
        pending = event.pending
        esc = pending.escalation
        used = self._used.get(esc.run_id, 0)
        if used < len(self.answers):
            self._used[esc.run_id] = used + 1
            answer = self.answers[used]
            try:
                self.broker.answer(esc.id, answer.response, ResolvedBy.ANSWERS_FILE, Audit(via=f"answers file: {answer.where()}"))
            except InvalidResponse as exc:
                self.broker.fail(esc.id, AnswerMismatch(f"{answer.where()}: answer {used + 1} does not fit: {exc}"))
            return
        if self.wait:
            if self._on_waiting is not None:
                self._on_waiting(pending)
            return
        try:
            self.broker.expire(esc.id)
        except NoTimeoutDefault:
            self.waiting.append(pending)
            if self._on_waiting is not None:
                self._on_waiting(pending)
