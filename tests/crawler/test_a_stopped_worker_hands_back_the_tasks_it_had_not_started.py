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

from crawler._politeness import Politeness
from crawler.testsite import RunningSite
from eventlog import TaskQueue
from tests.crawler.left_behind import leased_by_a_killed_worker, wait_until_delivered

pytestmark = pytest.mark.anyio
TASKS = 40
"""The worker fixture runs 4 at a time: 36 wait in the backlog."""
LONG_LEASE_MS = 120_000
"""Longer than the test: only a hand-back can free a task for another worker in time."""
SLOW = Politeness(per_host=1, delay_s=0.5)
"""A request every half second: the backlog is still there when SIGTERM comes."""


async def test_a_stopped_worker_hands_back_the_tasks_it_had_not_started(
    site: RunningSite,
    worker_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    job: str,
) -> None:
    queue, held = await leased_by_a_killed_worker(
        redis_client, job, site.url, TASKS, lease_ms=LONG_LEASE_MS, politeness=SLOW
    )
    last = held[-1]

    with anyio.fail_after(60):
        worker = await worker_process("w1")
        # Taken back (the last entry re-delivered): 4 running, the rest in the backlog.
        await wait_until_delivered(redis_client, queue, last, 2)
        worker.send_signal(signal.SIGTERM)
        assert await worker.wait() == 0

    assert await queue.leases_of("w1") == [], "none kept"
    other = TaskQueue(redis_client, job, "w2", lease_ms=LONG_LEASE_MS)
    claimed = await other.claim(TASKS)
    fetched = {path for path, count in site.fetch_counts().items() if count}
    unfinished = {
        lease.task.task_id for lease in held if lease.task.url.removeprefix(site.url) not in fetched
    }
    assert {lease.task.task_id for lease in claimed} >= unfinished
    assert all(lease.recoveries == 0 for lease in claimed), "handed back, not recovered"
