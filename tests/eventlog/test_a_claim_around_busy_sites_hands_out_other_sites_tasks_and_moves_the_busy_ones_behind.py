"""`TaskQueue.claim_around`: a worker whose requests to a site already wait for its
politeness slots names the site busy; the claim hands out other sites' tasks, moves the busy
site's entries it passed to the end of their lane (never leased, nothing logged), and
writes nothing when it finds only busy sites' tasks."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import Task, TaskQueue
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
BIG = "http://big.test"
SMALL = "http://small.test"


async def _lane_sites(redis_client: aioredis.Redis, queue: TaskQueue) -> list[str]:
    entries = await redis_client.xrange(queue.keys.tasks(1))
    # An entry's fields are [b"t", the task in msgpack].
    return [msgspec.msgpack.decode(fields[1], type=Task).site for _, fields in entries]


async def test_other_sites_tasks_are_handed_out_past_a_busy_site_s(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    tasks = [task(n, site=BIG) for n in range(10)] + [task(n, site=SMALL) for n in range(10, 13)]
    await queue.enqueue(tasks, actor="seed")
    events_before = await redis_client.xlen(queue.keys.events)

    claimed = await queue.claim_around(2, {BIG})

    assert [lease.task.task_id for lease in claimed.leases] == ["task-10", "task-11"]
    assert claimed.moved == 10
    # The big site's entries went behind, in their order (the leased ones stay in the lane
    # until they end); only what was handed out is leased.
    assert await _lane_sites(redis_client, queue) == [SMALL] * 3 + [BIG] * 10
    leased = {entry_id for _, entry_id in await queue.leases_of("w1")}
    assert leased == {lease.entry_id for lease in claimed.leases}
    assert await redis_client.xlen(queue.keys.events) == events_before
    # Not busy any more: the same claim takes them, in their order.
    rest = await queue.claim_around(20, set())
    assert [lease.task.task_id for lease in rest.leases] == [
        "task-12",
        *(f"task-{n}" for n in range(10)),
    ]


async def test_a_claim_that_finds_only_busy_sites_tasks_moves_and_leases_nothing(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(n, site=BIG) for n in range(5)], actor="seed")
    ids_before = [entry_id for entry_id, _ in await redis_client.xrange(queue.keys.tasks(1))]

    claimed = await queue.claim_around(4, {BIG})

    assert claimed == ([], 0)
    after = [entry_id for entry_id, _ in await redis_client.xrange(queue.keys.tasks(1))]
    assert after == ids_before
    assert await queue.leases_of("w1") == []


async def test_a_scan_that_meets_only_busy_entries_moves_them_if_the_lane_goes_on(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    tasks = [task(n, site=BIG) for n in range(8)] + [task(8, site=SMALL)]
    await queue.enqueue(tasks, actor="seed")

    # The budget reaches only the big site's entries: moved behind, nothing handed out...
    assert await queue.claim_around(1, {BIG}, budget=4) == ([], 4)
    assert await _lane_sites(redis_client, queue) == [BIG] * 4 + [SMALL] + [BIG] * 4
    # ...so that the next call reaches the small site's task.
    found = await queue.claim_around(1, {BIG}, budget=8)
    assert [lease.task.task_id for lease in found.leases] == ["task-8"]
    assert found.moved == 4
