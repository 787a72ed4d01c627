"""What becomes of a lease whose holder died: the decision every worker of a job makes the
same way, a native worker (`crawler._worker`) and a Scrapy process (``crawler.scrapy``).

Pure: the lease in, the event (and the task to requeue) out; writing them is the queue's
(`eventlog.TaskQueue.recover`, or the taker's own finish for a lease it took back).
"""

from __future__ import annotations

import msgspec

from eventlog import Lease, Task, TaskAborted, TaskReclaimed

Recovery = tuple[Lease, TaskReclaimed | TaskAborted, Task | None]
"""What `TaskQueue.recover` takes: the lease, its event, the task to requeue (None: ended)."""


def past_recovery_limit(lease: Lease, recovery_limit: int) -> bool:
    """Whether the lease's task was taken over more often than the job allows: it is
    aborted rather than run again (a page that kills every worker that fetches it)."""
    return lease.recoveries > recovery_limit


def aborted_for_recoveries(
    lease: Lease, actor: str, recovery_limit: int, owners: tuple[str, ...]
) -> TaskAborted:
    """The task's end once it is past its recovery limit, naming the owners it went through."""
    task = lease.task
    return TaskAborted(
        actor=actor,
        task_id=task.task_id,
        attempt=task.attempt,
        reason=f"recovered {lease.recoveries} times (limit {recovery_limit})",
        deliveries=lease.deliveries,
        owners=owners,
    )


def recovery_of(lease: Lease, actor: str, recovery_limit: int) -> Recovery:
    """An expired lease of another worker's: its task back in the recovery lane with its
    recoveries and owners counted (``TaskReclaimed``), or aborted past the limit."""
    task = lease.task
    previous = lease.previous_owner or "?"
    owners = (*task.owners, previous)
    if past_recovery_limit(lease, recovery_limit):
        return lease, aborted_for_recoveries(lease, actor, recovery_limit, owners), None
    moved = msgspec.structs.replace(task, recoveries=lease.recoveries, owners=owners)
    reclaimed = TaskReclaimed(
        actor=actor,
        task_id=task.task_id,
        attempt=task.attempt,
        previous_owner=previous,
        deliveries=lease.deliveries,
        unrecorded_fetch=lease.unrecorded_fetch,
    )
    return lease, reclaimed, moved
