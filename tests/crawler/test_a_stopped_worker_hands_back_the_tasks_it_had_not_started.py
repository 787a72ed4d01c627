"""SIGTERM on a worker that holds more tasks than it runs (a restart's pending list, taken
back into its backlog) hands every one of them back: another worker can claim them at
once, rather than after their leases expire with a recovery counted against each."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler.testsite import RunningSite
from eventlog import JobKeys, Lease, Task, TaskQueue
from eventlog._connection import command
from eventlog._keys import WORKERS_GROUP

pytestmark = pytest.mark.anyio
TASKS = 40
CONCURRENCY = 4
"""The worker fixture's: 36 of the 40 wait in the backlog."""
LONG_LEASE_MS = 120_000
"""Longer than the test: only a hand-back can free a task for another worker in time."""
SLOW = Politeness(per_host=1, delay_s=0.5)
"""A request every half second: the backlog is still there when SIGTERM comes."""


async def _deliveries(redis: aioredis.Redis, queue: TaskQueue, lease: Lease) -> int:
    reply = await command(
        redis, "XPENDING", queue.keys.lanes[lease.lane], WORKERS_GROUP,
        lease.entry_id, lease.entry_id, 1, "w1",
    )  # fmt: skip
    return int(reply[0][3]) if reply else 0


async def test_a_stopped_worker_hands_back_the_tasks_it_had_not_started(
    site: RunningSite,
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    config = JobConfig(
        seeds=(site.url + "/",), obey_robots=False, max_depth=0, lease_ms=LONG_LEASE_MS,
        politeness=SLOW,
    )  # fmt: skip
    await save_config(redis_client, JobKeys(job), config)
    queue = TaskQueue(redis_client, job, "w1", lease_ms=LONG_LEASE_MS)
    tasks = [
        Task(task_id=f"{n:016x}", url=f"{site.url}/item/{n + 1}", site=site.url)
        for n in range(TASKS)
    ]
    await queue.enqueue(tasks, actor="test")
    held = await queue.claim(TASKS)  # as a SIGKILLed w1 leaves them
    assert len(held) == TASKS

    with anyio.fail_after(60):
        worker = await worker_process("w1")
        # Taken back (the last entry re-delivered): 4 running, the rest in the backlog.
        while await _deliveries(redis_client, queue, held[-1]) < 2:
            await anyio.sleep(0.01)
        worker.send_signal(signal.SIGTERM)
        assert await worker.wait() == 0

    assert await TaskQueue(redis_client, job, "w1").leases_of("w1") == [], "none kept"
    other = TaskQueue(redis_client, job, "w2", lease_ms=LONG_LEASE_MS)
    claimed = await other.claim(TASKS)
    fetched = {path for path, count in site.fetch_counts().items() if count}
    unfinished = [task for task in tasks if task.url.removeprefix(site.url) not in fetched]
    assert {lease.task.task_id for lease in claimed} >= {t.task_id for t in unfinished}
    assert all(lease.recoveries == 0 for lease in claimed), "handed back, not recovered"
