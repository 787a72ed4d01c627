"""What a SIGKILLed worker leaves behind, set up through the real API, and read back: for
the tests of a worker restarted under the same name (``w1``)."""

from __future__ import annotations

import signal
import time
from collections.abc import Awaitable, Callable

import anyio
import redis.asyncio as aioredis
from anyio.abc import Process

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from eventlog import CheckpointSaved, Counts, Cursor, JobKeys, Lease, Task, TaskQueue
from eventlog._connection import command
from eventlog._keys import WORKERS_GROUP

CONSUMER = "w1"
BATCH = 1_000
CHECKPOINT_CONCURRENCY = 50
"""Checkpoints written at once (each on a connection of the client's pool)."""
DEFAULT_POLITENESS = Politeness()


def item_task(site: str, n: int) -> Task:
    """Task ``n`` (from 0): the test site's item page ``n + 1``."""
    return Task(task_id=f"{n:016x}", url=f"{site}/item/{n + 1}", site=site)


async def leased_by_a_killed_worker(
    redis: aioredis.Redis,
    job: str,
    site: str,
    tasks: int,
    *,
    lease_ms: int,
    politeness: Politeness = DEFAULT_POLITENESS,
    checkpointed: bool = False,
) -> tuple[TaskQueue, list[Lease]]:
    """The job (item pages only, no links followed) with ``tasks`` tasks leased by ``w1``,
    each checkpointed at page 1 if asked: the pending list a SIGKILLed ``w1`` leaves (its
    name lock is not held: no process had it)."""
    config = JobConfig(
        seeds=(site + "/",),
        obey_robots=False,
        max_depth=0,
        lease_ms=lease_ms,
        politeness=politeness,
    )
    await save_config(redis, JobKeys(job), config)
    queue = TaskQueue(redis, job, CONSUMER, lease_ms=lease_ms)
    limiter = anyio.CapacityLimiter(CHECKPOINT_CONCURRENCY)

    async def checkpoint(lease: Lease) -> None:
        saved = CheckpointSaved(
            actor=CONSUMER,
            task_id=lease.task.task_id,
            attempt=1,
            cursor=Cursor(page=1, url=lease.task.url),
            counts=Counts(pages=1),
        )
        async with limiter:
            await queue.checkpoint(lease, saved)

    held: list[Lease] = []
    for start in range(0, tasks, BATCH):
        await queue.enqueue(
            [item_task(site, n) for n in range(start, min(start + BATCH, tasks))], actor="test"
        )
        leases = await queue.claim(BATCH)
        if checkpointed:
            async with anyio.create_task_group() as tg:
                for lease in leases:
                    tg.start_soon(checkpoint, lease)
        held += leases
    assert len(held) == tasks
    return queue, held


async def deliveries(
    redis: aioredis.Redis, queue: TaskQueue, first: Lease, last: Lease
) -> dict[str, int]:
    """Delivery count of each of ``w1``'s pending entries from ``first`` to ``last`` of
    ``first``'s lane; an entry no longer ``w1``'s is not there."""
    reply = await command(
        redis, "XPENDING", queue.keys.lanes[first.lane], WORKERS_GROUP,
        first.entry_id, last.entry_id, 1_000_000, CONSUMER,
    )  # fmt: skip
    return {entry[0].decode(): int(entry[3]) for entry in reply}


async def wait_until_delivered(
    redis: aioredis.Redis, queue: TaskQueue, lease: Lease, times: int
) -> None:
    """Return once the server has delivered ``lease``'s entry to ``w1`` ``times`` times."""
    while (await deliveries(redis, queue, lease, lease)).get(lease.entry_id, 0) < times:
        await anyio.sleep(0.001)


async def kill_while(process: Process, holds: Callable[[], Awaitable[bool]]) -> None:
    """SIGKILL ``process`` at a moment ``holds()`` is true: it is stopped (SIGSTOP) before
    the look that decides, so nothing it does between that look and the kill can make the
    look untrue; if the look fails, it goes on (SIGCONT) until the next time."""
    while True:
        if await holds():
            process.send_signal(signal.SIGSTOP)
            if await holds():
                break
            process.send_signal(signal.SIGCONT)
        await anyio.sleep(0.002)
    process.send_signal(signal.SIGKILL)


async def holds_its_name(
    redis: aioredis.Redis, keys: JobKeys, name: str, old: bytes | str | None
) -> float:
    """When a worker process started as ``name`` holds the name (its lock no longer ``old``,
    the value the killed process left): the moment it is up."""
    while await redis.get(keys.worker_lock(name)) in (old, None):
        await anyio.sleep(0.005)
    return time.time()
