"""`TaskQueue.claim_around` on a lane whose entries are all of busy sites (a recrawl of one
site, whose politeness slots are all taken): nothing is moved, however often a worker
claims; each call reads on from where the last stopped, and a task of another site
enqueued behind them is still reached. The place it read up to holds for one set of busy
sites only."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import TaskQueue
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
BIG = "http://big.test"
MID = "http://mid.test"
SMALL = "http://small.test"


async def _entry_ids(redis_client: aioredis.Redis, queue: TaskQueue) -> list[object]:
    entries = await redis_client.xrange(queue.keys.tasks(1))
    return [entry_id for entry_id, _ in entries or []]


async def test_a_lane_of_one_busy_site_is_never_moved_behind_itself(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(n, site=BIG) for n in range(10)], actor="seed")
    ids_before = await _entry_ids(redis_client, queue)

    for _ in range(5):
        assert await queue.claim_around(2, {BIG}, budget=4, look_ahead=3) == ([], 0)

    assert await _entry_ids(redis_client, queue) == ids_before
    assert await queue.leases_of("w1") == []


async def test_another_site_s_task_enqueued_behind_them_is_still_reached(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(n, site=BIG) for n in range(10)], actor="seed")
    for _ in range(3):  # read up to the lane's end: nothing moved
        assert await queue.claim_around(1, {BIG}, budget=4, look_ahead=3) == ([], 0)
    await queue.enqueue([task(10, site=SMALL)], actor="seed")

    moved, handed_out = 0, []
    for _ in range(4):
        claimed = await queue.claim_around(1, {BIG}, budget=4, look_ahead=3)
        moved += claimed.moved
        handed_out += [lease.task.task_id for lease in claimed.leases]
        if handed_out:
            break

    assert handed_out == ["task-10"]
    assert moved == 10, "only the busy entries in front of it were moved, each once"


async def test_where_it_read_up_to_is_dropped_when_other_sites_are_busy(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue("w1")
    tasks = [task(n, site=MID) for n in range(4)]
    tasks += [task(n, site=BIG) for n in range(4, 6)] + [task(n, site=MID) for n in range(6, 8)]
    await queue.enqueue(tasks, actor="seed")
    # Both busy: the look past the first four reads the big site's two, finds nothing.
    assert await queue.claim_around(1, {MID, BIG}, budget=4, look_ahead=2) == ([], 0)

    # The big site is busy no more: its tasks, read before as busy, are looked at again
    # (kept, the place read up to would have skipped them, and nothing would move).
    claimed = await queue.claim_around(1, {MID}, budget=4, look_ahead=2)
    assert claimed == ([], 4)
    claimed = await queue.claim_around(1, {MID}, budget=4, look_ahead=2)
    assert [lease.task.task_id for lease in claimed.leases] == ["task-4"]
