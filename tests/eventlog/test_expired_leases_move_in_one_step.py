"""Expired leases are moved to the recovery lane (or aborted) in one server-side step each,
never through the mover's own pending list; a lease renewed or moved since it was read is
left alone."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    LANE_RECOVERY,
    EventLog,
    Lease,
    LeaseLost,
    Task,
    TaskAborted,
    TaskQueue,
    TaskReclaimed,
)
from tests.eventlog.helpers import age, checkpoint, done, task

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
LEASE_MS = 10_000


def reclaimed(lease: Lease, actor: str) -> tuple[Lease, TaskReclaimed, Task]:
    moved = msgspec.structs.replace(lease.task, recoveries=lease.recoveries, owners=("w1",))
    event = TaskReclaimed(
        actor=actor,
        task_id=lease.task.task_id,
        attempt=1,
        previous_owner="w1",
        deliveries=lease.deliveries,
    )
    return lease, event, moved


async def stalled_lease(make_queue: MakeQueue, redis_client: aioredis.Redis) -> Lease:
    w1 = make_queue("w1", lease_ms=LEASE_MS)
    await w1.enqueue([task(1)], actor="seed")
    [lease] = await w1.claim(1)
    await age(redis_client, w1, lease, LEASE_MS + 1)
    return lease


async def test_an_expired_lease_goes_to_the_recovery_lane_without_passing_through_the_mover(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    lease = await stalled_lease(make_queue, redis_client)
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    [found], _ = await w2.expired()
    assert (found.entry_id, found.task, found.previous_owner) == (lease.entry_id, lease.task, "w1")
    assert (found.deliveries, found.recoveries) == (2, 1), "as a takeover counts them"
    assert [p.entry_id for p in await w1.pending()] == [lease.entry_id], "reading takes nothing"

    assert await w2.recover([reclaimed(found, "w2")]) == [True]
    assert await w1.pending() == [] and await w2.pending() == []
    with pytest.raises(LeaseLost):
        await w1.finish(lease, done(lease.task.task_id))
    [again] = await make_queue("w3", lease_ms=LEASE_MS).claim(1)
    assert (again.lane, again.task.task_id, again.recoveries) == (LANE_RECOVERY, "task-1", 1)
    assert again.task.owners == ("w1",)
    events = [e.event for e in await log.read_range()]
    assert [type(e).__name__ for e in events] == ["TaskEnqueued", "TaskReclaimed"]


async def test_a_lease_renewed_after_it_was_read_is_not_moved(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    lease = await stalled_lease(make_queue, redis_client)
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    [found], _ = await w2.expired()
    # The owner woke up in between: its checkpoint renews the lease.
    await w1.checkpoint(lease, checkpoint(lease.task.task_id, 1))
    before = await log.length()
    assert await w2.recover([reclaimed(found, "w2")]) == [False]
    assert await log.length() == before, "nothing appended"
    assert [p.entry_id for p in await w1.pending()] == [lease.entry_id]
    assert await w1.finish(lease, done(lease.task.task_id)) is not None


async def test_two_workers_moving_the_same_lease_move_it_once(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    await stalled_lease(make_queue, redis_client)
    w2, w3 = make_queue("w2", lease_ms=LEASE_MS), make_queue("w3", lease_ms=LEASE_MS)
    ([by_w2], _), ([by_w3], _) = await w2.expired(), await w3.expired()
    assert await w3.recover([reclaimed(by_w3, "w3")]) == [True]
    assert await w2.recover([reclaimed(by_w2, "w2")]) == [False]
    assert await w2.expired() == ([], None)
    events = [e.event for e in await log.read_range()]
    assert sum(isinstance(e, TaskReclaimed) for e in events) == 1
    assert await redis_client.xlen(w2.keys.tasks(LANE_RECOVERY)) == 1


async def test_a_task_past_the_recovery_limit_is_aborted_in_the_same_step(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    lease = await stalled_lease(make_queue, redis_client)
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    task_id = lease.task.task_id
    await w1.checkpoint(lease, checkpoint(task_id, 1))
    await age(redis_client, w1, lease, LEASE_MS + 1)
    [found], _ = await w2.expired()
    aborted = TaskAborted(
        actor="w2",
        task_id=task_id,
        attempt=1,
        reason="recovered too often",
        deliveries=found.deliveries,
        owners=("w1",),
    )
    assert await w2.recover([(found, aborted, None)]) == [True]
    assert await w2.checkpoint_ids([task_id]) == {}, "its checkpoint pointer dropped"
    assert await w2.remaining() == 0, "not requeued"
    assert isinstance((await log.read_range())[-1].event, TaskAborted)


async def test_a_lease_about_to_expire_says_when(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    await w1.enqueue([task(1)], actor="seed")
    [lease] = await w1.claim(1)
    await age(redis_client, w1, lease, LEASE_MS - 300)
    assert await w2.expired(horizon_ms=100) == ([], None), "not within 100 ms"
    found, soonest = await w2.expired(horizon_ms=500)
    assert found == [] and soonest is not None and 0.2 < soonest <= 0.3
