"""A restarted worker's take-back reads each pending task with its last checkpoint: no
round trip per task when it starts."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import CheckpointSaved, EventLog, Task, TaskQueue
from eventlog._keys import WORKERS_GROUP
from tests.eventlog.helpers import checkpoint

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
SITE = "http://site.test"


def _task(task_id: str) -> Task:
    return Task(task_id=task_id, url=f"{SITE}/{task_id}", site=SITE)


async def test_each_taken_back_task_comes_with_its_last_checkpoint(make_queue: MakeQueue) -> None:
    # Short ids are msgpack fixstr, ids over 31 bytes str8: the server reads both.
    ids = ["short", "x" * 40, "never-checkpointed"]
    queue = make_queue("w1")
    await queue.enqueue([_task(i) for i in ids], actor="seed")
    for lease in await queue.claim(10):
        if lease.task.task_id != "never-checkpointed":
            await queue.checkpoint(lease, checkpoint(lease.task.task_id, 1))
            await queue.checkpoint(lease, checkpoint(lease.task.task_id, 2))

    leases, rest = await make_queue("w1").take_back(100)
    assert rest is None and [lease.task.task_id for lease in leases] == ids
    assert all(lease.resume is not None for lease in leases), "read with the lease"
    points = {lease.task.task_id: await queue.resume_point(lease) for lease in leases}
    assert points["never-checkpointed"] is None
    for task_id in ids[:2]:
        found = points[task_id]
        assert found is not None and isinstance(found[1], CheckpointSaved)
        assert found[1].task_id == task_id and found[1].cursor.page == 2


async def test_a_pending_entry_that_does_not_decode_is_dead_lettered_and_the_rest_taken_back(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([_task("a")], actor="seed")
    await redis_client.xadd(queue.keys.tasks(1), {"t": b"\x00\x01"})
    await queue.enqueue([_task("b")], actor="seed")
    # Read raw, as a worker killed before decoding would have: all three in w1's PEL.
    await redis_client.xreadgroup(WORKERS_GROUP, "w1", {queue.keys.tasks(1): ">"})

    restarted = make_queue("w1")
    leases, _ = await restarted.take_back(100)
    assert [lease.task.task_id for lease in leases] == ["a", "b"]
    assert restarted.poisoned == 1
    [letter] = await log.dead_letters()
    assert "does not decode" in letter.reason


async def test_the_pipelined_take_back_gives_what_chunk_by_chunk_reads_give(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    # Two lanes of different lengths, read 3 entries a lane at a time: chunks overlap in
    # flight, and one lane runs out before the other.
    await queue.enqueue([_task(f"n{i:02}") for i in range(11)], actor="seed")
    await queue.enqueue(
        [Task(task_id=f"h{i}", url=f"{SITE}/h{i}", site=SITE, priority=1) for i in range(4)],
        actor="seed",
    )
    held = await queue.claim(20)
    for lease in held[::2]:
        await queue.checkpoint(lease, checkpoint(lease.task.task_id, 3))
    # An entry deleted while pending has nothing to run: it is skipped.
    gone = held[5]
    await redis_client.xdel(queue.keys.tasks(gone.lane), gone.entry_id)

    restarted = make_queue("w1")
    leases = await restarted.take_back_all(chunk=3)
    for lane in {lease.lane for lease in held}:
        assert [lease.entry_id for lease in leases if lease.lane == lane] == [
            lease.entry_id for lease in held if lease.lane == lane and lease is not gone
        ], "each once, in order"
    assert all(lease.deliveries == 2 for lease in leases), "the take-back is a delivery"
    checkpointed = {lease.task.task_id for lease in held[::2]}
    for lease in leases:
        point = await restarted.resume_point(lease)
        assert (point is not None) == (lease.task.task_id in checkpointed)

    chunked, after = [], None
    while True:
        part, after = await make_queue("w1").take_back(3, after)
        chunked += part
        if after is None:
            break
    assert [(lease.entry_id, lease.resume) for lease in chunked] == [
        (lease.entry_id, lease.resume) for lease in leases
    ]
    assert all(lease.deliveries == 3 for lease in chunked)


async def test_each_taken_back_entry_gets_its_own_delivery_count(make_queue: MakeQueue) -> None:
    queue = make_queue("w1")
    await queue.enqueue([_task("a"), _task("b")], actor="seed")
    await queue.claim(10)
    await make_queue("w1").take_back_all()  # a, b: delivered twice
    await queue.enqueue([_task("c")], actor="seed")
    await queue.claim(10)  # c: once
    leases = await make_queue("w1").take_back_all()
    assert {lease.task.task_id: lease.deliveries for lease in leases} == {"a": 3, "b": 3, "c": 2}
