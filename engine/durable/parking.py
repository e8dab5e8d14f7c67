"""Parked runs: a run waiting for a person that no process holds, kept as rows only.

A worker's run that pauses for a person ends its execution (docs/durable.md, "A waiting run
costs rows"): its recorded steps and its pending escalation stay, its row says `parked` and
belongs to nobody. A decision, from any process, leaves the run with nothing pending; a worker
then claims it (`claim_ready`: parked -> queued, first claimer wins) and puts it back on the
workers' queue, where a worker continues it from its recorded steps.

A process that holds runs live (a console, `run --wait`, `resume`) parks its waiting runs too,
but keeps them (`park(..., hold=True)`: the row parked, its owner kept): it claims them back itself
on their decision (`claim_parked` with `holder`) and continues them in-process; a worker takes a
held run only once its holder is gone (`holder`, then `claim_ready` with `holder`).

Each change is one conditional statement, so two processes never both act on one run. The
worker's poll (`ready`, `overdue`, `stuck`) is what makes it correct, news only makes it fast:
a decision heard late, a claimer killed between its claim and the queue, a deadline with no
process to time it are all found by the next poll.
"""

from __future__ import annotations

import time
from typing import Any, Iterable

import sqlalchemy as sa

from engine.durable import rows as checked
from engine.durable.database import ACTIVE, PARKED, QUEUED, Database, escalations, runs

_PENDING = sa.exists().where(escalations.c.run_id == runs.c.run_id, escalations.c.status == "pending")


def park(db: Database, run_id: str, owner: str, *, hold: bool = False) -> tuple[bool, bool]:
    """The run's execution has ended at a person's decision: its row is parked, owned by nobody
    (`hold`: still by `owner`, which continues it on its decision), its events written first:
    the row never says more than the log holds. Returns (parked, still waits): parked False when
    `owner` no longer holds it (taken over meanwhile: nothing changed); still waits False when
    a decision came before the row said parked (the run is to be woken now). One transaction:
    the look was a second one, on a thread hop of its own, at every park."""
    db.flush_events()
    with db.engine.begin() as c:
        done = c.execute(runs.update().where(runs.c.run_id == run_id, runs.c.owner == owner, runs.c.status.in_(ACTIVE))
                         .values(status=PARKED, owner=owner if hold else None, heartbeat=time.time() if hold else None))
        if done.rowcount != 1:
            return False, False
        return True, c.execute(_waits(run_id)).first() is not None


def _held_by(holder: str | None) -> sa.ColumnElement[bool]:
    return runs.c.owner.is_(None) if holder is None else runs.c.owner == holder


def claim_ready(db: Database, run_id: str, owner: str, now: float | None = None, *, holder: str | None = None) -> bool:
    """Claim a parked run that waits on nothing any more, to put it back on the queue: it is
    `queued`, owned by the claimer until a worker starts it (a claimer that dies before queueing
    it is found by `stuck`). `holder`: the gone process that held it (else it is held by
    nobody). First claimer wins."""
    with db.engine.begin() as c:
        done = c.execute(runs.update().where(runs.c.run_id == run_id, runs.c.status == PARKED, _held_by(holder), ~_PENDING)
                         .values(status=QUEUED, owner=owner, heartbeat=now if now is not None else time.time()))
    return done.rowcount == 1


def claim_parked(db: Database, run_id: str, owner: str, now: float | None = None, *, holder: str | None = None,
                 ready: bool = False) -> bool:
    """`escalate resume` (or the process holding it, on its decision) continues a parked run
    itself, waiting or not: it is this process's, waiting. `holder`: the owner its row names
    (None: held by nobody). `ready`: only when none of its escalations is pending (the holder's
    wake: the look and the claim in one statement). First claimer wins."""
    where = [runs.c.run_id == run_id, runs.c.status == PARKED, _held_by(holder)] + ([~_PENDING] if ready else [])
    with db.engine.begin() as c:
        done = c.execute(runs.update().where(*where)
                         .values(status="waiting", owner=owner, heartbeat=now if now is not None else time.time()))
    return done.rowcount == 1


def holder(db: Database, run_id: str) -> tuple[str, float | None] | None:
    """(the process holding a parked run, its heartbeat at park), or None: not parked, or held
    by nobody."""
    query = sa.select(runs.c.owner, runs.c.heartbeat).where(runs.c.run_id == run_id, runs.c.status == PARKED)
    with db.engine.connect() as c:
        row = c.execute(query).first()
    if row is None or not isinstance(row[0], str):
        return None
    return row[0], row[1] if isinstance(row[1], float) else None


def held(db: Database) -> list[tuple[str, str, float | None]]:
    """(run id, holder, its heartbeat at park) of the runs parked and held by a process: those of
    a holder now gone are a console's to continue at its open, as any interrupted run."""
    query = sa.select(runs.c.run_id, runs.c.owner, runs.c.heartbeat).where(runs.c.status == PARKED, runs.c.owner.is_not(None))
    with db.engine.connect() as c:
        return [(run_id, owner, beat if isinstance(beat, float) else None) for run_id, owner, beat in c.execute(query)
                if isinstance(run_id, str) and isinstance(owner, str)]


def let_go(db: Database, owner: str) -> None:
    """A process that held parked runs stops: they are held by nobody, for any worker to
    continue on their decision."""
    with db.engine.begin() as c:
        c.execute(runs.update().where(runs.c.status == PARKED, runs.c.owner == owner).values(owner=None, heartbeat=None))


def _waits(run_id: str) -> sa.Select[Any]:
    return sa.select(escalations.c.id).where(escalations.c.run_id == run_id, escalations.c.status == "pending").limit(1)


def still_waits(db: Database, run_id: str) -> bool:
    """Whether a run has an escalation pending (a read: most runs that park still wait)."""
    with db.engine.connect() as c:
        return c.execute(_waits(run_id)).first() is not None


def queued(db: Database, at_most: int) -> int:
    """How many runs wait in the workers' queue (queued, not begun), counted up to `at_most`."""
    if at_most <= 0:
        return 0
    first = sa.select(runs.c.run_id).where(runs.c.status == QUEUED).limit(at_most).subquery()
    with db.engine.connect() as c:
        return int(c.execute(sa.select(sa.func.count()).select_from(first)).scalar() or 0)


def ready(db: Database, among: Iterable[str] | None = None) -> list[str]:
    """Parked runs with nothing pending (all of them, or those of the escalations `among`)."""
    query = sa.select(runs.c.run_id).where(runs.c.status == PARKED, ~_PENDING)
    if among is not None:
        ids = list(among)
        if not ids:
            return []
        # From the named escalations to their runs, by their keys. SQLite, which keeps no
        # statistics here, walked the status index (every parked run) for each decision heard:
        # 88,000 instructions (11 ms) a decision at 9,800 parked. The status is compared as an
        # expression, which no index serves, so that it cannot be chosen again.
        named = escalations.alias("named")
        query = (sa.select(runs.c.run_id).distinct()
                 .select_from(named.join(runs, runs.c.run_id == named.c.run_id))
                 .where(named.c.id.in_(ids), sa.func.coalesce(runs.c.status, "") == PARKED, ~_PENDING))
    with db.engine.connect() as c:
        return list(c.execute(query).scalars())


def overdue(db: Database, now: float | None = None) -> list[dict[str, Any]]:
    """Pending escalations of parked runs whose deadline has passed: their defaults are due,
    and no process times them."""
    now = now if now is not None else time.time()
    query = (escalations.select()
             .where(escalations.c.status == "pending", escalations.c.deadline <= now,
                    escalations.c.run_id.in_(sa.select(runs.c.run_id).where(runs.c.status == PARKED)))
             .order_by(escalations.c.deadline))
    with db.engine.connect() as c:
        return checked.valid(c.execute(query).mappings(), lambda row: checked.escalation(dict(row)))


def stuck(db: Database) -> list[tuple[str, str, float | None]]:
    """(run id, claimer, its heartbeat) of runs claimed back from parking that their claimer has
    not handed to a worker yet, or died before it did: `queued` with an owner (their workflow
    tells which: cancelled, never queued)."""
    query = sa.select(runs.c.run_id, runs.c.owner, runs.c.heartbeat).where(runs.c.status == QUEUED, runs.c.owner.is_not(None))
    with db.engine.connect() as c:
        return [(run_id, owner, beat if isinstance(beat, float) else None) for run_id, owner, beat in c.execute(query)
                if isinstance(run_id, str) and isinstance(owner, str)]


def take_stuck(db: Database, run_id: str, owner: str, dead_owner: str, now: float | None = None) -> bool:
    """Take over the claim of a claimer that is gone (first taker wins)."""
    with db.engine.begin() as c:
        done = c.execute(runs.update().where(runs.c.run_id == run_id, runs.c.status == QUEUED, runs.c.owner == dead_owner)
                         .values(owner=owner, heartbeat=now if now is not None else time.time()))
    return done.rowcount == 1

