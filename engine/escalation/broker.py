"""The escalation broker: the single owner of every pending human escalation in a process.

One asyncio future per escalation, keyed by its id. The agent side awaits `ask()`; a human
(console), the answers file (headless) or a deadline resolves it exactly once. Subscribers hear
"raised", then "resolved" or "cancelled", synchronously and in that order for each escalation,
even when a subscriber answers from inside its own "raised" notification.

All methods must be called on the thread running the asyncio loop that awaits `ask()`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Protocol

from engine.kernel.clock import Cancellable, Clock
from engine.kernel.errors import EscalationError, RequestChanged
from engine.kernel.model import (
    Audit,
    Decision,
    Escalation,
    OnTimeout,
    Origin,
    PendingEscalation,
    ResolvedBy,
    Response,
    ResponseType,
    escalation_digest,
)
from engine.kernel.responses import APPROVE, DENY, kind_of
from engine.escalation.tally import Key, Tally

log = logging.getLogger(__name__)

RAISED = "raised"
RESOLVED = "resolved"
CANCELLED = "cancelled"  # the waiting run was cancelled: the escalation is withdrawn



class UnknownEscalation(EscalationError):
    pass


class AlreadyResolved(EscalationError):
    pass


class InvalidResponse(EscalationError):
    pass


class NoTimeoutDefault(EscalationError):
    """`expire()` on an escalation that waits for a human: there is no default to apply."""


class Ledger(Protocol):
    """What the broker asks of the database behind its futures (engine/durable/decisions.py
    DecisionStore): short transactions, the first decision written wins."""

    def lookup(self, esc_id: str) -> tuple[str, Decision | None] | None:
        """The status of a known escalation and its decision, or None when unknown."""

    def raise_once(self, pending: PendingEscalation) -> float:
        """Record a raised escalation unless recorded already; returns its first raise time."""

    def decide(self, decision: Decision) -> Decision | None:
        """The decision that holds after trying this one (None: withdrawn); raises RequestChanged."""

    def decide_many(self, decisions: list[Decision]) -> list[Decision | RequestChanged | None]:
        """`decide` for each, in one transaction."""

    def withdraw(self, esc_id: str) -> None: ...


@dataclass(frozen=True)
class BrokerEvent:
    kind: str  # RAISED | RESOLVED | CANCELLED
    pending: PendingEscalation
    decision: Decision | None = None
    elsewhere: bool = False  # decided by another process (a console, `escalate answer`, a worker)


def timeout_decision(pending: PendingEscalation, now: float) -> Decision:
    """The Decision a passed deadline produces (resolvedBy timeout_default).

    Tool approvals fail closed (deny). Otherwise `allowAgentDecision` wins, then the reason's
    onTimeout. Raises NoTimeoutDefault when there is no deadline or the default is `wait`:
    nothing may be assumed, a human must answer.
    """
    esc = pending.escalation
    policy = pending.policy
    waited = policy.timeout_seconds
    nobody = f"nobody answered within {waited:g} s" if waited is not None else "nobody answered"

    def make(response: Response, note: str, stops: bool = False) -> Decision:
        return Decision(esc.id, response, ResolvedBy.TIMEOUT_DEFAULT, now, f"{nobody}: {note}", stops,
                        digest=escalation_digest(pending))

    if esc.origin is Origin.TOOL_APPROVAL:
        return make(Response(ResponseType.OPTION, selected_option=DENY), "denied (fail closed)")
    if policy.deadline is None:
        raise NoTimeoutDefault(f"escalation {esc.id} has no deadline: it waits for a human")
    if esc.allow_agent_decision:
        return make(Response(ResponseType.AGENT_DECIDE), "the agent decides")
    kind = policy.on_timeout
    if kind is OnTimeout.CONTINUE:
        return make(Response(ResponseType.AGENT_DECIDE), "the agent continues on its own judgement")
    if kind is OnTimeout.STOP:
        return make(Response(ResponseType.SKIP), "the task stops", stops=True)
    if kind is OnTimeout.AGENT_DECIDE:
        return make(Response(ResponseType.AGENT_DECIDE), "the agent decides")
    if kind is OnTimeout.RECOMMENDED:
        rec = esc.recommended
        if rec is None:
            return make(Response(ResponseType.AGENT_DECIDE), "no recommended option: the agent decides")
        return make(Response(ResponseType.OPTION, selected_option=rec.id), f"recommended option {rec.id}")
    if kind is OnTimeout.OPTION:
        if policy.option_id is None or esc.option(policy.option_id) is None:
            return make(
                Response(ResponseType.AGENT_DECIDE),
                f"default option {policy.option_id} was not offered: the agent decides",
            )
        return make(Response(ResponseType.OPTION, selected_option=policy.option_id), f"default option {policy.option_id}")
    raise NoTimeoutDefault(f"escalation {esc.id} has no timeout default: it waits for a human")


def validate_response(pending: PendingEscalation, response: Response) -> None:
    """Refuse answers that cannot mean anything for this escalation."""
    esc = pending.escalation
    if response.edited_args is not None:
        if esc.origin is not Origin.TOOL_APPROVAL or response.selected_option != APPROVE:
            raise InvalidResponse(f"escalation {esc.id}: edited arguments go with approving a tool call only")
        if not isinstance(response.edited_args, dict):
            raise InvalidResponse(f"escalation {esc.id}: edited arguments must be a JSON object")
    problem = kind_of(response, esc.origin).validate(esc, response)
    if problem is not None:
        raise InvalidResponse(f"escalation {esc.id}: {problem}")


def _bound(pending: PendingEscalation, decision: Decision) -> Decision:
    """The decision, if it was made on the request this run raised (a decision made before
    digests names none): a run never carries out what its decider did not see."""
    if decision.digest and decision.digest != escalation_digest(pending):
        raise EscalationError(f"escalation {pending.escalation.id} was decided on another request than this "
                              "run raised: not carried out")
    return decision


class _Entry:
    __slots__ = ("pending", "future", "timer", "adopted")

    def __init__(self, pending: PendingEscalation, future: asyncio.Future[Decision]) -> None:
        self.pending = pending
        self.future = future
        self.timer: Cancellable | None = None
        self.adopted = False  # listed from the database; its run has not asked here (yet)


class EscalationBroker:
    """`store`: the database behind the futures (durable runs). With it, a raised escalation is
    recorded, a decision is applied only if nobody decided first (any process), and an
    escalation asked again after a restart keeps its original deadline or its decision. What
    other processes do reaches the broker through its public calls (`adopt`, `settle`,
    `refresh`), made by the database's feed (engine/durable/feed.py)."""

    def __init__(self, clock: Clock, store: Ledger | None = None, *, identity: str = "") -> None:
        self.clock = clock
        self.store = store
        self.identity = identity  # who answers here (Decision.decided_by), e.g. "alice@laptop via console"
        self._on_changed: list[Callable[[str], None]] = []
        self._entries: dict[str, _Entry] = {}  # pending only, in raise order
        self._tallies: list[Tally] = []  # counts of the pending by a key, kept with _entries
        self._done: dict[str, Decision | None] = {}  # resolved (Decision) or withdrawn (None)
        self._subscribers: list[Callable[[BrokerEvent], None]] = []
        self._queue: deque[BrokerEvent] = deque()
        self._dispatching = False

    # -- the agent side ---------------------------------------------------------------------

    async def ask(self, pending: PendingEscalation) -> Decision:
        """Register the escalation, tell subscribers, arm its deadline, wait for the decision.
        Cancelling the awaiting task withdraws the escalation."""
        esc_id = pending.escalation.id
        adopted = self._entries.get(esc_id)
        if adopted is not None and adopted.adopted:  # a continued run asks what was listed at start
            adopted.adopted = False
            return _bound(pending, await self._await(adopted))
        if esc_id in self._entries or esc_id in self._done:
            if self.store is not None and esc_id in self._done and self._done[esc_id] is not None:
                return _bound(pending, self._done[esc_id])  # type: ignore[arg-type]  # decided before its run continued
            raise EscalationError(f"escalation id {esc_id!r} is already in use")
        if self.store is not None:
            known = self.store.lookup(esc_id)
            if known is not None and known[0] != "pending":  # decided while this run was not running
                if known[1] is None:
                    raise asyncio.CancelledError(f"escalation {esc_id} was withdrawn")
                self._done[esc_id] = known[1]
                return _bound(pending, known[1])
            if known is None:
                self.store.raise_once(pending)
        entry = self._register(pending)
        return _bound(pending, await self._await(entry))

    def record_raised(self, pending: PendingEscalation) -> Escalation:
        """Write a raised escalation to the database now (every console lists it), ahead of
        `ask`, which then finds it pending; returns it as recorded: with its first raise time
        if this id was recorded before (a step run again after a crash)."""
        if self.store is None:
            return pending.escalation
        created = self.store.raise_once(pending)
        esc = pending.escalation
        return esc if created == esc.created_at else replace(esc, created_at=created)

    def adopt(self, pending: PendingEscalation) -> None:
        """List an escalation still pending in the database whose run is not running here (yet):
        it can be answered (the database keeps the decision for its run) and its deadline
        applies; when its run continues here and asks again, it waits on this same entry."""
        if pending.escalation.id not in self._entries and pending.escalation.id not in self._done:
            self._register(pending).adopted = True

    def _register(self, pending: PendingEscalation) -> _Entry:
        esc_id = pending.escalation.id
        entry = _Entry(pending, asyncio.get_running_loop().create_future())
        self._entries[esc_id] = entry
        for tally in self._tallies:
            tally.added(pending)
        self._notify(BrokerEvent(RAISED, pending))
        deadline = pending.policy.deadline
        if deadline is not None and esc_id in self._entries:  # a subscriber may have answered
            entry.timer = self.clock.call_at(deadline, lambda: self._on_deadline(esc_id))
        return entry

    async def _await(self, entry: _Entry) -> Decision:
        try:
            return await entry.future
        except asyncio.CancelledError:
            if self._entries.get(entry.pending.escalation.id) is entry:
                self._withdraw(entry)
            raise

    # -- the deciding side ------------------------------------------------------------------

    def answer(
        self, escalation_id: str, response: Response, resolved_by: ResolvedBy = ResolvedBy.HUMAN,
        audit: Audit | None = None, seen: PendingEscalation | None = None,
    ) -> Decision:
        """Resolve a pending escalation once; refuses unknown, resolved or meaningless answers.
        `seen`: the request as the decider was shown it (default: as listed here); RequestChanged
        when the database holds another one (it is then listed again as held)."""
        entry = self._entry(escalation_id)
        validate_response(entry.pending, response)
        decision = Decision(escalation_id, response, resolved_by, self.clock.now(), audit=audit or Audit(),
                            decided_by=self.identity, digest=escalation_digest(seen or entry.pending))
        held = self._resolve(entry, decision)
        if held is not decision:
            if held is None:
                who = "nobody: it was withdrawn"
            else:  # another console, `escalate answer`: named
                who = held.resolved_by.value + (f" ({held.decided_by})" if held.decided_by else "")
            raise AlreadyResolved(f"escalation {escalation_id} was already decided by {who}")
        return decision

    def apply_many(self, decisions: list[Decision]) -> list[Decision]:
        """Several decisions at once (a batch, a taught rule releasing what waits): each is its
        own decision, won or lost on its own, written in one database transaction. Those no
        longer pending here, or not valid for their escalation, are left out; returns the
        decisions applied."""
        ready: list[tuple[_Entry, Decision]] = []
        for decision in decisions:
            entry = self._entries.get(decision.escalation_id)
            if entry is None:
                continue
            validate_response(entry.pending, decision.response)
            if decision.resolved_by is ResolvedBy.HUMAN and not decision.decided_by:
                decision = replace(decision, decided_by=self.identity)  # the other consoles say who
            if not decision.digest:  # a rule's or a batch's: made on the request as listed here
                decision = replace(decision, digest=escalation_digest(entry.pending))
            ready.append((entry, decision))
        if self.store is not None and ready:
            held = self.store.decide_many([d for _, d in ready])
        else:
            held = [d for _, d in ready]
        applied = []
        for (entry, decision), holding in zip(ready, held):
            if self._entries.get(decision.escalation_id) is not entry:
                continue  # resolved meanwhile (a subscriber answered it)
            if isinstance(holding, RequestChanged):  # left waiting, listed again as the database holds it
                self._look_again(decision.escalation_id)
                continue
            if holding is None:
                self._withdraw(entry)
                entry.future.cancel()
                continue
            # Recorded by this process's own transaction: elsewhere only when another won it.
            self._resolve(entry, holding, recorded=True, elsewhere=holding is not decision)
            if holding is decision:
                applied.append(decision)
        return applied

    def expire(self, escalation_id: str) -> Decision:
        """Apply the timeout default now, as if the deadline had passed."""
        entry = self._entry(escalation_id)
        decision = timeout_decision(entry.pending, self.clock.now())
        self._resolve(entry, decision)
        return decision

    def fail(self, escalation_id: str, error: Exception) -> None:
        """Make the waiting `ask()` raise `error` (e.g. an answers-file entry that does not fit)."""
        entry = self._entry(escalation_id)
        if self.store is not None:
            self.store.withdraw(escalation_id)
        self._finish(entry, None)
        entry.future.set_exception(error)
        self._notify(BrokerEvent(CANCELLED, entry.pending))

    def cancel_run(self, run_id: str) -> None:
        """Withdraw every pending escalation of a cancelled run; its waiters get CancelledError."""
        for entry in [e for e in self._entries.values() if e.pending.escalation.run_id == run_id]:
            if self.store is not None:
                self.store.withdraw(entry.pending.escalation.id)
            self._withdraw(entry)
            entry.future.cancel()

    def forget_run(self, run_id: str) -> None:
        """Stop waiting on a run's escalations in this process, leaving them pending in the
        database (the process stops; the run continues later, elsewhere or here)."""
        for entry in [e for e in self._entries.values() if e.pending.escalation.run_id == run_id]:
            self._finish(entry, None)
            self._done.pop(entry.pending.escalation.id, None)
            entry.future.cancel()

    def hold_run(self, run_id: str) -> int:
        """The run's execution here ends while it waits (it parks), its escalations stay listed
        as adopted ones: answerable, their deadlines armed, and asked again by the run when it
        continues. Returns how many it was waiting on (0: nothing to park for)."""
        held = 0
        for entry in [e for e in self._entries.values() if e.pending.escalation.run_id == run_id and not e.adopted]:
            # A new entry in its place: the old one's waiter, cancelled with its task, finds it
            # replaced and withdraws nothing (`_await`).
            kept = _Entry(entry.pending, asyncio.get_running_loop().create_future())
            kept.adopted, kept.timer = True, entry.timer
            self._entries[entry.pending.escalation.id] = kept
            entry.timer = None
            entry.future.cancel()
            held += 1
        return held

    # -- queries and subscriptions ------------------------------------------------------------

    def pending(self) -> list[PendingEscalation]:
        return [e.pending for e in self._entries.values()]

    def tally(self, key: Key) -> Tally:
        """How many pending share a key (`key(pending)`), counted once and kept current as
        escalations come and go: a question asked at every answer costs a lookup."""
        tally = Tally(key, self.pending)
        self._tallies.append(tally)
        return tally

    def get(self, escalation_id: str) -> PendingEscalation | None:
        entry = self._entries.get(escalation_id)
        return entry.pending if entry else None

    def decision(self, escalation_id: str) -> Decision | None:
        """The decision of a resolved escalation (None when pending, withdrawn or unknown)."""
        return self._done.get(escalation_id)

    def subscribe(self, callback: Callable[[BrokerEvent], None]) -> Callable[[], None]:
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    # -- internals ----------------------------------------------------------------------------

    def _entry(self, escalation_id: str) -> _Entry:
        entry = self._entries.get(escalation_id)
        if entry is not None:
            return entry
        if escalation_id in self._done:
            done = self._done[escalation_id]
            what = "withdrawn" if done is None else "resolved" + (f" by {done.decided_by}" if done.decided_by else "")
            raise AlreadyResolved(f"escalation {escalation_id} was already {what}")
        raise UnknownEscalation(f"no escalation with id {escalation_id!r}")

    def _on_deadline(self, escalation_id: str) -> None:
        entry = self._entries.get(escalation_id)
        if entry is None:  # resolved meanwhile: the default must apply at most once
            return
        entry.timer = None
        try:
            decision = timeout_decision(entry.pending, self.clock.now())
        except NoTimeoutDefault:
            return  # a deadline on a waiting policy means nothing: keep waiting
        try:
            self._resolve(entry, decision)
        except RequestChanged:  # listed again as held; a person decides it
            log.warning("escalation %s changed before its timeout default applied: it waits", escalation_id)

    def _finish(self, entry: _Entry, decision: Decision | None) -> None:
        esc_id = entry.pending.escalation.id
        del self._entries[esc_id]
        for tally in self._tallies:
            tally.removed(entry.pending)
        self._done[esc_id] = decision
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None

    def _resolve(self, entry: _Entry, decision: Decision, *, recorded: bool = False,
                 elsewhere: bool | None = None) -> Decision | None:
        """Resolve with `decision`, or with the one the database already holds; returns the
        decision applied (None: the escalation was withdrawn elsewhere). `elsewhere`: whether
        another process decided (by default: a decision recorded already, or not this one)."""
        held: Decision | None = decision
        if self.store is not None and not recorded:
            if not decision.digest:
                decision = replace(decision, digest=escalation_digest(entry.pending))
                held = decision
            try:
                held = self.store.decide(decision)
            except RequestChanged:
                self._look_again(decision.escalation_id)
                raise
        if held is None:
            self._withdraw(entry)
            entry.future.cancel()
            return None
        self._finish(entry, held)
        if not entry.future.done():
            entry.future.set_result(held)
        if elsewhere is None:
            elsewhere = recorded or held is not decision
        self._notify(BrokerEvent(RESOLVED, entry.pending, held, elsewhere=elsewhere))
        return held

    # -- what the database holds (engine/durable/feed.py) ---------------------------------------

    def settle(self, escalation_id: str, decision: Decision | None) -> None:
        """A decision (None: a withdrawal) read from the database, for what waits here: its run
        goes on with it. Nothing waiting under this id: nothing to do."""
        entry = self._entries.get(escalation_id)
        if entry is None:
            return
        if decision is None:
            self._withdraw(entry)
            entry.future.cancel()
        else:
            self._resolve(entry, decision, recorded=True)

    def refresh(self, pending: PendingEscalation) -> None:
        """An escalation pending in the database, as its row holds it: when listed here as
        another request, it is listed again as held (subscribers hear RAISED)."""
        entry = self._entries.get(pending.escalation.id)
        if entry is not None and escalation_digest(entry.pending) != escalation_digest(pending):
            for tally in self._tallies:
                tally.removed(entry.pending)
                tally.added(pending)
            entry.pending = pending
            self._notify(BrokerEvent(RAISED, pending))

    def waiting_ids(self) -> list[str]:
        """The escalations pending here, in raise order."""
        return list(self._entries)

    def known(self, escalation_id: str) -> bool:
        """Listed here, or resolved or withdrawn here. Safe from any thread (as `waits_on`)."""
        return escalation_id in self._entries or escalation_id in self._done

    def waits_on(self, escalation_id: str) -> bool:
        """Whether the escalation is pending here. Unlike the other methods, safe from any thread
        (the feed's listening thread asks, engine/durable/feed.py): a lookup in a dict, which
        the loop changes one whole operation at a time."""
        return escalation_id in self._entries

    def on_changed(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """`callback(id)` when a decision finds the database holding another request than the
        one listed here (RequestChanged): the feed reads that row again."""
        self._on_changed.append(callback)

        def unsubscribe() -> None:
            if callback in self._on_changed:
                self._on_changed.remove(callback)

        return unsubscribe

    def _look_again(self, escalation_id: str) -> None:
        for callback in list(self._on_changed):
            callback(escalation_id)

    def _withdraw(self, entry: _Entry) -> None:
        self._finish(entry, None)
        self._notify(BrokerEvent(CANCELLED, entry.pending))

    def _notify(self, event: BrokerEvent) -> None:
        # Queue re-entrant notifications so every subscriber sees events in causal order.
        self._queue.append(event)
        if self._dispatching:
            return
        self._dispatching = True
        try:
            while self._queue:
                current = self._queue.popleft()
                for callback in list(self._subscribers):
                    try:
                        callback(current)
                    except Exception:  # one faulty subscriber must not break the others
                        log.exception("escalation subscriber failed on %s", current.kind)
        finally:
            self._dispatching = False
