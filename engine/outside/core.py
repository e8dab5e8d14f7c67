"""The desk every outside agent shares (docs/outside.md): a session is a run, the rules decide
first, a person decides the rest through a durable escalation raised once per idempotency key.

Typical use (a hook: one request per process; the MCP server keeps one OutsideDesk open):

    rules = load_rules(project, args.rules)
    asker = Session.of("claude", session_id, project, task=args.task)
    verdict = tool_verdict(rules, asker, tool, tool_input)     # no database opened
    if verdict.gate is Gate.ASK:
        desk = await OutsideDesk.open(rules, db=args.db, identity="claude hook")
        try:
            outcome = await desk.settle_tool(asker, tool, tool_input, verdict, key=tool_use_id)
        finally:
            desk.close()

Waiting: `settle_tool` / `decide` wait on the broker (the database's feed brings a decision made
anywhere), beat the session's run row, and call `on_progress` every `every` seconds. Cancelling
the waiting task withdraws the escalation (the asker is gone: SIGTERM, a client's cancel);
`cancel_on_signals` makes SIGTERM/SIGINT/SIGHUP and the parent's death do that.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from engine.durable.owners import new_owner
from engine.escalation.desk import EscalationDesk, ToolCallOutcome
from engine.escalation.verdict import Gate, ToolVerdict
from engine.kernel.model import Decision, Escalation
from engine.outside.session import Session, load_rules, tool_verdict

if TYPE_CHECKING:
    from engine.services.wiring import Services
    from rules.model import Rules

__all__ = ["OutsideDesk", "OutsideError", "Session", "Waiting", "cancel_on_signals", "load_rules", "longest_wait",
           "tool_verdict"]

T = TypeVar("T")

PROGRESS_SECONDS = 5.0
MAX_ATTEMPTS = 20  # escalations under one key after withdrawals (each asked again after its asker died)


class OutsideError(Exception):
    """A request that cannot be asked (one line)."""


@dataclass(frozen=True)
class Waiting:
    """What a progress callback is told while a person has not answered."""

    escalation_id: str
    waited: float  # seconds since this process began waiting
    deadline: float | None  # wall clock when the rules' default applies; None: it waits for a person


Progress = Callable[[Waiting], "Awaitable[None] | None"]


def longest_wait(rules: "Rules") -> float | None:
    """The longest a tool approval can wait under these rules before its default applies (None:
    some wait for a person without a deadline). What `hook install` sets the hook's timeout above."""
    from engine.kernel.model import Origin, Reason

    probe = Escalation("probe", "", "", "", Reason.SECURITY_CONCERN, "", origin=Origin.TOOL_APPROVAL)
    longest = 0.0
    tasks = [""] + list(rules.task_overrides)
    candidates = [None] + [rule for _, rule in rules.all_rules()]
    for task in tasks:
        for rule in candidates:
            policy = rules.timeout_policy(replace(probe, task_id=task), 0.0, rule)
            if policy.deadline is None:
                return None
            longest = max(longest, policy.deadline)
    return longest


class OutsideDesk:
    """The services of one process asking for outside agents, and their requests."""

    def __init__(self, services: "Services", rules: "Rules") -> None:
        self.services = services
        self.rules = rules
        self.owner = new_owner()  # the session's run row's owner while this process waits

    @classmethod
    async def open(cls, rules: "Rules", *, db: str | None = None, identity: str) -> "OutsideDesk":
        """Open the services (the database: `db`, else $ESCALATE_DB, else .escalate/escalate.db
        under the current folder) and withdraw what waits for askers that are gone. Raises
        DatabaseError (one line)."""
        from engine.services import open_decisions

        desk = cls(await open_decisions(db, identity=identity), rules)
        try:
            await asyncio.to_thread(desk.sweep)
        except BaseException:
            desk.close()
            raise
        return desk

    def close(self) -> None:
        self.services.close()

    @property
    def db(self) -> Any:
        assert self.services.db is not None
        return self.services.db

    # -- requests ---------------------------------------------------------------------------------

    async def settle_tool(self, asker: Session, tool: str, args: dict[str, Any], verdict: ToolVerdict, *, key: str,
                          on_progress: Progress | None = None, every: float = PROGRESS_SECONDS,
                          reuse_within: float | None = None) -> ToolCallOutcome:
        """What the verdict makes of the call; for ASK, a tool approval (options approve/deny,
        the rules' reason, the full input in its context) decided by a person, a taught rule or
        the deadline's default (deny: fail closed). Only `outcome.runs` may run it, with
        `outcome.args` when the person edited them (checked as JSON objects, then by the rules).
        `reuse_within`: a decision under `key` older than this many seconds is not reused (a
        key that names a call rather than one request of it: a new request is raised)."""
        if verdict.gate is not Gate.ASK:
            return await self._desk("").settle_tool(asker.run_id, asker.task, asker.agent, tool, dict(args), verdict)
        esc_id = await asyncio.to_thread(self.free_id, asker, key, reuse_within)
        return await self._wait(asker, esc_id, lambda desk: desk.settle_tool(
            asker.run_id, asker.task, asker.agent, tool, dict(args), verdict), on_progress, every)

    async def decide(self, asker: Session, escalation: Escalation, *, key: str, on_progress: Progress | None = None,
                     every: float = PROGRESS_SECONDS, kept: bool = True) -> Decision:
        """An agent's own escalation (seed 004's fields; its id, run, task and agent are set
        here): the rules on its text first, else a person (or the default at its deadline).
        `kept` False: nobody comes back for it once this process is gone (Session.request_id)."""
        esc_id = await asyncio.to_thread(self.free_id, asker, key, kept=kept)
        asked = replace(escalation, id="", run_id=asker.run_id, task_id=asker.task, agent=asker.agent, created_at=0.0)
        return await self._wait(asker, esc_id, lambda desk: desk.decide(asked), on_progress, every)

    def withdraw(self, esc_id: str) -> bool:
        """Withdraw a pending request (its asker is gone); False when it was no longer pending."""
        row = self.db.get_escalation(esc_id)
        if row is None or row["status"] != "pending":
            return False
        self.db.withdraw(esc_id)
        self.services.broker.settle(esc_id, None)
        return True

    def free_id(self, asker: Session, key: str, reuse_within: float | None = None, *, kept: bool = True) -> str:
        """The id this request has, or gets: the pending or decided escalation under `key`, else
        a new one (never one withdrawn: a person may have seen it withdrawn; nor, with
        `reuse_within`, one decided longer ago than that)."""
        now = time.time()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            esc_id = asker.request_id(key, attempt, kept=kept)
            row = self.db.get_escalation(esc_id)
            if row is None or row["status"] == "pending":
                return esc_id
            if row["status"] == "decided" and (reuse_within is None or (row["decided_at"] or 0.0) >= now - reuse_within):
                return esc_id
        raise OutsideError(f"request {key!r} of session {asker.session_id!r} was withdrawn {MAX_ATTEMPTS} times: "
                           "not asked again")

    def sweep(self) -> list[str]:
        """Withdraw the requests of outside sessions whose askers are gone (a hook killed with
        SIGKILL); returns the escalations withdrawn."""
        from engine.durable.askers import withdraw_gone

        return withdraw_gone(self.db)

    # -- waiting ----------------------------------------------------------------------------------

    def _desk(self, esc_id: str) -> EscalationDesk:
        """A desk whose escalation is raised under `esc_id` (its recorded step's key)."""
        async def record(name: str, fn: Callable[[str | None], Awaitable[Any]]) -> Any:
            return await fn(esc_id)

        services = self.services
        return EscalationDesk(services.broker, self.rules, services.clock, record=record)

    async def _wait(self, asker: Session, esc_id: str, make: Callable[[EscalationDesk], Awaitable[T]],
                    on_progress: Progress | None, every: float) -> T:
        from engine.durable.database import HEARTBEAT_SECONDS

        await asyncio.to_thread(self._enter_run, asker)
        task = asyncio.ensure_future(make(self._desk(esc_id)))
        started = last = time.monotonic()
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=min(every, HEARTBEAT_SECONDS))
                if done:
                    return task.result()
                await asyncio.to_thread(self._beat, asker)
                if on_progress is not None and time.monotonic() - last >= every:
                    last = time.monotonic()
                    pending = self.services.broker.get(esc_id)
                    told = on_progress(Waiting(esc_id, last - started, pending.policy.deadline if pending else None))
                    if inspect.isawaitable(told):
                        await told
        except BaseException:
            # The asker is gone (cancelled, a signal): withdrawn, so nobody decides it into nothing
            # (unless its client comes back for it: then it stays pending in the database).
            task.cancel()
            if not asker.keeps:
                self.withdraw(esc_id)
            raise
        finally:
            self._leave_run(asker)

    def _enter_run(self, asker: Session) -> None:
        """The session's run row: waiting, owned by this process."""
        import sqlalchemy as sa

        now = time.time()
        if self.db.get_run(asker.run_id) is None:
            try:
                self.db.create_run(run_id=asker.run_id, task=asker.task, workflow=asker.kind,
                                   path=f"{_prefix()}{asker.kind}", flow=None, input=asker.session_id, script=None,
                                   rules=None, workspace=str(asker.project), status="waiting", started=now,
                                   owner=self.owner, heartbeat=now)
                return
            except sa.exc.IntegrityError:  # another hook of the session made it meanwhile
                pass
        self.db.update_run(asker.run_id, status="waiting", owner=self.owner, heartbeat=now, finished=None, error=None)

    def _beat(self, asker: Session) -> None:
        self.db.update_run(asker.run_id, heartbeat=time.time(), owner=self.owner)

    def _leave_run(self, asker: Session) -> None:
        """Nothing of the session waits any more: its run is done (until its next request)."""
        if not self.db.pending_escalations([asker.run_id]):
            self.db.update_run(asker.run_id, status="done", finished=time.time(), heartbeat=None)


ATTENTION = "attention"  # a run's event, and the news naming its run: its session waits on its person
MAX_ATTENTION_TEXT = 2000  # characters of a notification's message kept (a line to show, not a log)


def note_attention(db: Any, asker: Session, message: str, *, title: str = "", kind: str = "") -> int:
    """Record that the session waits on its person (Claude Code's Notification: its permission
    dialog, an idle prompt) as an `attention` event of its run (made if new), and send the news
    `attention <run id>`: a console that hears it reads the run's events (a hint to look, like
    every message). Returns the event's seq. The text is kept as given: whoever shows it makes it
    visible (engine/text_safety.py)."""
    import json

    import sqlalchemy as sa

    from engine.durable.database import events
    from engine.runtime.events import utc_now_iso

    fields = {"agent": asker.agent, "message": message[:MAX_ATTENTION_TEXT], "title": title[:200],
              "notification_type": kind[:100]}
    row = {"run_id": asker.run_id, "type": ATTENTION, "time": utc_now_iso(), "fields": json.dumps(fields)}
    news = f"{ATTENTION} {asker.run_id}"
    if db.get_run(asker.run_id) is None:
        now = time.time()
        try:
            db.create_run(run_id=asker.run_id, task=asker.task, workflow=asker.kind, path=f"{_prefix()}{asker.kind}",
                          flow=None, input=asker.session_id, script=None, rules=None, workspace=str(asker.project),
                          status="done", started=now, finished=now, owner=None, heartbeat=None)
        except sa.exc.IntegrityError:  # another hook of the session made it meanwhile
            pass
    for _ in range(MAX_ATTEMPTS):  # two hooks of one session at once: the later takes the next seq
        try:
            with db.engine.begin() as c:
                last = c.execute(sa.select(sa.func.max(events.c.seq)).where(events.c.run_id == asker.run_id)).scalar()
                seq = int(last or 0) + 1
                c.execute(events.insert().values(seq=seq, **row))
                db.signals.in_transaction(c, news)
            db.signals.committed(news)
            return seq
        except sa.exc.IntegrityError:
            continue
    raise OutsideError(f"session {asker.session_id!r}: its notification could not be recorded")


def cancel_on_signals(task: "asyncio.Task[Any]", *, watch_parent: bool = False) -> Callable[[], None]:
    """SIGTERM, SIGINT and SIGHUP cancel `task` (its request is withdrawn); with `watch_parent`
    the death of the parent, or of the parent's parent (the agent behind its hook's shell), does
    too: an agent killed with SIGKILL leaves its hook behind.
    Returns the function that undoes it."""
    loop = asyncio.get_running_loop()
    signals = [s for s in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", None)) if s is not None]
    for sig in signals:
        loop.add_signal_handler(sig, task.cancel)
    watcher: asyncio.Task[None] | None = None
    if watch_parent:
        lineage = _lineage()

        async def watch() -> None:
            while _lineage() == lineage:
                await asyncio.sleep(0.5)
            task.cancel()

        watcher = loop.create_task(watch(), name="escalate parent watch")

    def undo() -> None:
        for sig in signals:
            loop.remove_signal_handler(sig)
        if watcher is not None:
            watcher.cancel()

    return undo


def _lineage() -> tuple[int, int | None]:
    """This process's parent and the parent's parent: agents run hooks through a shell (`sh -c`),
    which outlives an agent killed with SIGKILL; it is then given another parent. (Where /proc
    is not there, the parent alone.)"""
    parent = os.getppid()
    try:
        with open(f"/proc/{parent}/stat", "rb") as stat:
            # pid (comm) state ppid ...: comm may hold spaces and parentheses, so after the last ')'
            return parent, int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return parent, None


def _prefix() -> str:
    from engine.durable.askers import PATH_PREFIX

    return PATH_PREFIX
