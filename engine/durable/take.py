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


def take(queue_name: str, executor_id: str, app_version: str) -> None:
    """Claim what waits on `queue_name` for this executor and start it (each workflow on DBOS's
    loop, as a dequeued one). Nothing when another poller of the queue took it
    first, or nothing waits there (a resume of a finished workflow enqueues nothing): DBOS's
    claim is the one conditional update either way, so a workflow never starts twice."""
    from dbos._core import execute_dequeued_workflow
    from dbos._dbos import _get_dbos_instance
    from dbos._queue import _INTERNAL_QUEUE_CONSTRUCTION, Queue

    dbos = _get_dbos_instance()
    system = dbos._sys_db
    owner_xid = str(uuid.uuid4())  # the claim's token: the execution started below owns the row with it
    queue = Queue(queue_name, database_backed_queue=True, token=_INTERNAL_QUEUE_CONSTRUCTION)
    taken, _ = system.start_queued_workflows(queue, executor_id, app_version, None, 0, owner_xid=owner_xid)
    for status in system.get_workflow_statuses(taken):
        execute_dequeued_workflow(dbos, status, owner_xid)
