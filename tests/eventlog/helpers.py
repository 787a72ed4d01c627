"""Small builders shared by the eventlog tests."""

from __future__ import annotations

import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    CheckpointSaved,
    Counts,
    Cursor,
    Lease,
    PageFetched,
    Task,
    TaskDone,
    TaskQueue,
)


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
