"""Small builders shared by the eventlog tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence, Set
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    CheckpointSaved,
    Counts,
    Cursor,
    Event,
    JobIdentity,
    JobKeys,
    Lease,
    PageFetched,
    ProjectorLease,
    SettleMode,
    Task,
    TaskAborted,
    TaskDone,
    TaskQueue,
    TaskReclaimed,
    create_identity,
    failover_field,
    hold_projector_lease,
    set_identity,
)

if TYPE_CHECKING:
    from eventlog._control import ControlEvent


def task(n: int, *, priority: int = 0, site: str = "http://site.test") -> Task:
    return Task(task_id=f"task-{n}", url=f"{site}/page/{n}", site=site, priority=priority)


def checkpoint(task_id: str, page: int, actor: str = "w1") -> CheckpointSaved:
    return CheckpointSaved(
        actor=actor, task_id=task_id, attempt=1, cursor=Cursor(page=page), counts=Counts(pages=page)
    )


def fetched(task_id: str, page: int, actor: str = "w1") -> PageFetched:
    return PageFetched(
        actor=actor,
        task_id=task_id,
        attempt=1,
        url=f"http://site.test/{task_id}/{page}",
        status=200,
        page=page,
    )


def done(task_id: str, actor: str = "w1") -> TaskDone:
    return TaskDone(actor=actor, task_id=task_id, attempt=1)


async def age(redis_client: aioredis.Redis, queue: TaskQueue, lease: Lease, ms: int) -> None:
    """Make the server see ``lease`` idle for ``ms``, as if its owner had stalled that long.

    XCLAIM ... IDLE sets the server's idle time of the entry without changing its owner
    (JUSTID: nor its delivery count), so the tests need not wait out real leases.
    """
    await redis_client.execute_command(
        "XCLAIM", queue.keys.tasks(lease.lane), WORKERS_GROUP, queue.consumer, 0,
        lease.entry_id, "IDLE", ms, "JUSTID",
    )  # fmt: skip


class RecordingObserver:
    """A `QueueObserver` that writes down every call it is told of, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        """(hook, what it was told): a step's mode and events, a renewal's lost ids."""

    def settling(self, mode: SettleMode, lease: Lease) -> None:
        self.calls.append(("settling", mode))

    def settled(
        self, mode: SettleMode, lease: Lease, events: Sequence[Event], seconds: float
    ) -> None:
        assert seconds >= 0
        self.calls.append(("settled", (mode, [type(e).__name__ for e in events])))

    def enqueued(self, tasks: Sequence[Task], new: Sequence[bool], seconds: float) -> None:
        assert len(tasks) == len(new) and seconds >= 0
        self.calls.append(("enqueued", list(new)))

    def renewed(self, leases: Sequence[Lease], lost: Set[str], seconds: float) -> None:
        assert seconds >= 0
        self.calls.append(("renewed", (len(leases), sorted(lost))))

    def recovered(self, events: Sequence[TaskReclaimed | TaskAborted], seconds: float) -> None:
        assert seconds >= 0
        self.calls.append(("recovered", [type(e).__name__ for e in events]))

    def controlled(self, event: ControlEvent, seconds: float) -> None:
        assert seconds >= 0
        self.calls.append(("controlled", type(event).__name__))

    def hooks(self) -> list[str]:
        """The hooks called, in order."""
        return [hook for hook, _ in self.calls]


async def raise_epoch(
    redis_client: aioredis.Redis,
    keys: JobKeys,
    identity: JobIdentity,
    epoch: int,
    *,
    failover: bool,
) -> None:
    """Move the job to ``epoch``: recorded as a failover's, as FOLLOW_PRIMARY leaves it after
    a promotion, or not, as a restore leaves it."""
    await set_identity(redis_client, keys, JobIdentity(job_id=identity.job_id, epoch=epoch))
    if failover:
        await redis_client.hset(keys.primary, failover_field(epoch), "")


@asynccontextmanager
async def lease_in_the_job_s_epoch(
    redis_client: aioredis.Redis, keys: JobKeys
) -> AsyncIterator[tuple[JobIdentity, ProjectorLease]]:
    """A new job identity, and the projector's lease held in its epoch."""
    identity = await create_identity(redis_client, keys)
    async with hold_projector_lease(redis_client, keys, "/data/one") as lease:
        lease.epoch = identity.epoch
        yield identity, lease
