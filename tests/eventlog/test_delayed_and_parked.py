"""Tasks held back: delayed until a time (server clock), or parked until resumed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import (
    LANE_NORMAL,
    JobKeys,
    RetryScheduled,
    SitePaused,
    SiteResumed,
    TaskQueue,
    apply_control,
    read_controls,
)
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio


def retry(task_id: str) -> RetryScheduled:
    return RetryScheduled(actor="w1", task_id=task_id, attempt=1, delay_s=0, reason="HTTP 503")


async def test_a_delayed_task_comes_back_to_its_lane_when_due(
    make_queue: Callable[..., TaskQueue],
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(1)
    await queue.delay(lease, [retry(lease.task.task_id)], lease.task, 0)
    assert await queue.remaining() == 1 and await queue.claim(1) == []
    assert await queue.promote() == 1
    [again] = await queue.claim(1)
    assert (again.task, again.lane) == (lease.task, LANE_NORMAL)


async def test_a_task_delayed_into_the_future_waits(make_queue: Callable[..., TaskQueue]) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(1)
    await queue.delay(lease, [retry(lease.task.task_id)], lease.task, 60)
    assert await queue.promote() == 0
    assert await queue.claim(1) == []
    assert await queue.remaining() == 1


async def test_parked_tasks_of_a_site_come_back_when_it_resumes(
    make_queue: Callable[..., TaskQueue], redis_client: aioredis.Redis, keys: JobKeys
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(1), task(2)], actor="seed")
    site = task(1).site
    await apply_control(redis_client, keys, SitePaused(actor="alice", site=site, reason="r"))
    assert site in (await read_controls(redis_client, keys)).paused_sites
    for lease in await queue.claim(2):
        await queue.park(lease)
    assert await queue.claim(2) == []
    assert await queue.remaining() == 2, "parked tasks are not done"
    moved = await apply_control(
        redis_client, keys, SiteResumed(actor="alice", site=site, reason="r")
    )
    assert moved == 2
    assert (await read_controls(redis_client, keys)).paused_sites == frozenset()
    assert {lease.task.task_id for lease in await queue.claim(5)} == {"task-1", "task-2"}
