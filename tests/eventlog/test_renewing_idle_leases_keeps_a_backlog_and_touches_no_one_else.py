"""`TaskQueue.renew_idle` resets the idle time of the caller's leases that have waited at
least the given time (a backlog not started yet), counts no delivery, and never touches
another consumer's entry, even one idle far longer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import Task, TaskQueue
from eventlog._connection import command
from eventlog._keys import WORKERS_GROUP
from tests.eventlog.helpers import age

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
SITE = "http://site.test"
HOUR_MS = 3_600_000


async def _idle_and_deliveries(
    redis: aioredis.Redis, queue: TaskQueue
) -> dict[tuple[int, str], tuple[str, int, int]]:
    """Each pending entry (lane, entry id): its owner, idle ms and delivery count."""
    found = {}
    for lane, key in enumerate(queue.keys.lanes):
        for entry in await command(redis, "XPENDING", key, WORKERS_GROUP, "-", "+", 1000):
            found[lane, entry[0].decode()] = (entry[1].decode(), int(entry[2]), int(entry[3]))
    return found


async def test_only_the_caller_s_long_idle_leases_are_renewed(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    mine, theirs = make_queue("w1"), make_queue("w2")
    await mine.enqueue(
        [Task(task_id=f"t{i}", url=f"{SITE}/{i}", site=SITE, priority=i % 2) for i in range(9)],
        actor="seed",
    )
    held = await mine.claim(6)  # over two lanes
    other = await theirs.claim(3)
    waiting, running = held[:4], held[4:]
    for lease in waiting:
        await age(redis_client, mine, lease, HOUR_MS)
    for lease in other:
        await age(redis_client, theirs, lease, HOUR_MS)

    # Two entries a lane a call: the pass goes on from where each call stopped.
    assert await mine.renew_idle(min_idle_ms=HOUR_MS // 2, count=2) == len(waiting)

    after = await _idle_and_deliveries(redis_client, mine)
    for lease in waiting:
        owner, idle, deliveries = after[lease.lane, lease.entry_id]
        assert (owner, deliveries) == ("w1", 1) and idle < HOUR_MS // 2, "renewed, no delivery"
    for lease in running:
        assert after[lease.lane, lease.entry_id][0] == "w1"
    for lease in other:
        owner, idle, deliveries = after[lease.lane, lease.entry_id]
        assert (owner, deliveries) == ("w2", 1) and idle >= HOUR_MS, "not the caller's"
    assert await mine.renew_idle(min_idle_ms=HOUR_MS // 2) == 0, "nothing idle left"
