"""A run this process put on its own DBOS queue, taken from it here at once, as DBOS's queue
thread would take it, instead of waiting for that thread.

Why (issue 26): DBOS executes an existing workflow only through a queue's poll. A queue
registered on the decision is found by DBOS's queue manager at its next look for new queues
(once a second, no public way to hasten it): a run parked in a live process went on 259-951 ms
after its decision, against 8-37 ms held live. A queue kept registered while the run is parked
costs its poll, ten times a second (25-34 ms of CPU a second while the person thinks, against 8
idle). This is one iteration of DBOS's own dequeue for a queue with no limits
(`dbos/_queue.py` `queue_worker_thread`: the claim `start_queued_workflows`, a conditional
update, ENQUEUED -> PENDING owned by this executor, then `execute_dequeued_workflow`), run when
the queue is known to hold the run: DBOS's public API has no call for it (`resume_workflow`
enqueues, `start_workflow` with the same id does not execute an existing workflow). Measured in
docs/durable.md ("Wake"). Every private name of DBOS this module reads is here, and nowhere else.
"""

from __future__ import annotations

import uuid
from typing import Any


def _queue(queue_name: str) -> Any:
    from dbos._queue import _INTERNAL_QUEUE_CONSTRUCTION, Queue

    return Queue(queue_name, database_backed_queue=True, token=_INTERNAL_QUEUE_CONSTRUCTION)


def take(queue_name: str, executor_id: str, app_version: str) -> None:
    """Claim what waits on `queue_name` for this executor and start it (each workflow on DBOS's
    loop, as a dequeued one). Nothing when another poller of the queue took it
    first, or nothing waits there (a resume of a finished workflow enqueues nothing): DBOS's
    claim is the one conditional update either way, so a workflow never starts twice."""
    from dbos._core import execute_dequeued_workflow
    from dbos._dbos import _get_dbos_instance

    dbos = _get_dbos_instance()
    system = dbos._sys_db
    owner_xid = str(uuid.uuid4())  # the claim's token: the execution started below owns the row with it
    queue = _queue(queue_name)
    # Only this process puts workflows on its queue, each with escalate's fixed version: the claim
    # need not ask which version is the latest (one query less, ~0.7 ms of the wake).
    taken, _ = system.start_queued_workflows(queue, executor_id, app_version, None, 0, owner_xid=owner_xid,
                                             is_latest_version=False)
    for status in system.get_workflow_statuses(taken):
        execute_dequeued_workflow(dbos, status, owner_xid)


def warm(queue_name: str, executor_id: str, app_version: str, nobody: str) -> None:
    """The statements of DBOS's resume and of a take run once, changing nothing, so that they
    are compiled before a wake needs them (engine/durable/host.py `_warm_take_back`): the
    statuses of a workflow id no row has, a resume of no workflow (its read and its update,
    each matching no row: the statement is the same for any number of ids), and a take (what
    waits on the own queue is this process's to take anyway). Only the claim's update of a take
    stays to compile at the wake: DBOS makes it only when its read found a workflow."""
    from dbos._dbos import _get_dbos_instance

    dbos = _get_dbos_instance()
    dbos._sys_db.get_workflow_statuses([nobody])
    dbos._sys_db.resume_workflows([], queue_name=queue_name)
    take(queue_name, executor_id, app_version)
