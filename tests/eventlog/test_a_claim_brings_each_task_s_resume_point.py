"""A claim reads each task with its last checkpoint, in the same script: a task starts
without a round trip for its resume point. What a blocking claim waited for is read
without it (``resume`` None), and `TaskQueue.resume_point` reads it then."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import CheckpointSaved, EventLog, Task, TaskQueue, TaskReleased
from tests.eventlog.helpers import checkpoint

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
SITE = "http://site.test"


def _task(task_id: str) -> Task:
    return Task(task_id=task_id, url=f"{SITE}/{task_id}", site=SITE)


async def _give_back(queue: TaskQueue, leases: list) -> None:
    for lease in leases:
        released = TaskReleased(
            actor=queue.consumer, task_id=lease.task.task_id, attempt=1, reason="worker stopped"
        )
        await queue.requeue(lease, [released], lease.task, lease.lane)


async def test_each_claimed_task_comes_with_its_last_checkpoint(make_queue: MakeQueue) -> None:
    # Short ids are msgpack fixstr, ids over 31 bytes str8: the script reads both.
    ids = ["short", "x" * 40, "never-checkpointed"]
    queue = make_queue("w1")
    await queue.enqueue([_task(i) for i in ids], actor="seed")
    leases = await queue.claim(10)
    assert all(lease.resume == b"" for lease in leases), "read, and none yet"
    for lease in leases:
        if lease.task.task_id != "never-checkpointed":
            await queue.checkpoint(lease, checkpoint(lease.task.task_id, 1))
            await queue.checkpoint(lease, checkpoint(lease.task.task_id, 2))
    await _give_back(queue, leases)  # back in their lane, checkpoints kept

    other = make_queue("w2")
    again = await other.claim(10)
    assert sorted(lease.task.task_id for lease in again) == sorted(ids)
    points = {lease.task.task_id: await other.resume_point(lease) for lease in again}
    assert points["never-checkpointed"] is None
    for lease in again:
        task_id = lease.task.task_id
        # The same as reading it on its own, which a claim no longer needs.
        assert points[task_id] == (await other.last_checkpoints([task_id])).get(task_id)
        if task_id != "never-checkpointed":
            found = points[task_id]
            assert found is not None and isinstance(found[1], CheckpointSaved)
            assert found[1].cursor.page == 2


async def test_a_task_entry_that_does_not_decode_is_dead_lettered_and_the_rest_claimed(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([_task("a")], actor="seed")
    await redis_client.xadd(queue.keys.tasks(1), {"t": b"\xc1"})  # not msgpack at all
    await redis_client.xadd(queue.keys.tasks(1), {"t": b"\x92\x01\x02"})  # not a task
    await redis_client.xadd(queue.keys.tasks(1), {"x": b"", "y": b""})  # no task field
    await queue.enqueue([_task("b")], actor="seed")

    leases = await queue.claim(10)
    assert [lease.task.task_id for lease in leases] == ["a", "b"]
    assert all(lease.resume == b"" for lease in leases)
    assert queue.poisoned == 3
    assert len(await log.dead_letters()) == 3


async def test_what_a_blocking_claim_waited_for_reads_its_resume_point_when_it_starts(
    make_queue: MakeQueue,
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([_task("a")], actor="seed")
    [lease] = await queue.claim(1)
    await queue.checkpoint(lease, checkpoint("a", 3))
    await queue.ensure_groups()
    found: list = []

    async def claim() -> None:
        found.extend(await make_queue("w2").claim(1, block_ms=5_000))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(claim)
            await anyio.sleep(0.2)  # the claim is blocked on the lanes by now
            await _give_back(queue, [lease])
    [again] = found
    assert again.resume is None
    point = await queue.resume_point(again)
    assert point is not None and isinstance(point[1], CheckpointSaved)
    assert point[1].cursor.page == 3
