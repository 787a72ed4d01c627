"""Leases are PEL entries: renewed by their owner, reclaimed by others after expiry, fenced."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    LANE_RECOVERY,
    EventLog,
    Lease,
    LeaseLost,
    TaskQueue,
    TaskReclaimed,
)
from tests.eventlog.helpers import age, checkpoint, done, fetched, task

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
LEASE_MS = 10_000


async def claim_one(queue: TaskQueue) -> Lease:
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(1)
    return lease


async def test_a_renewed_lease_is_not_reclaimed(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    lease = await claim_one(w1)
    await age(redis_client, w1, lease, LEASE_MS - 100)
    assert await w1.renew([lease]) == set()
    assert await w2.reclaim() == []


async def test_an_expired_lease_is_reclaimed_by_another_worker(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    lease = await claim_one(w1)
    await age(redis_client, w1, lease, LEASE_MS + 1)
    [taken] = await w2.reclaim()
    assert (taken.entry_id, taken.task) == (lease.entry_id, lease.task)
    assert (taken.previous_owner, taken.deliveries, taken.recoveries) == ("w1", 2, 1)
    assert await w1.pending() == []


async def test_lease_expiry_is_the_servers_idle_time(make_queue: MakeQueue) -> None:
    # The one test that lets real time pass: expiry must follow the server's clock.
    w1, w2 = make_queue("w1", lease_ms=150), make_queue("w2", lease_ms=150)
    await claim_one(w1)
    assert await w2.reclaim() == []
    await anyio.sleep(0.3)
    [taken] = await w2.reclaim()
    assert taken.previous_owner == "w1"


async def test_every_reclaim_counts_a_delivery(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queues = [make_queue(f"w{n}", lease_ms=LEASE_MS) for n in range(4)]
    lease = await claim_one(queues[0])
    for n in range(1, 4):
        await age(redis_client, queues[n - 1], lease, LEASE_MS + 1)
        [lease] = await queues[n].reclaim()
        assert lease.deliveries == n + 1


async def test_a_stalled_owner_cannot_finish_a_task_that_was_reclaimed(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    lease = await claim_one(w1)
    await age(redis_client, w1, lease, LEASE_MS + 1)
    [taken] = await w2.reclaim()
    before = await log.length()

    with pytest.raises(LeaseLost) as lost:
        await w1.finish(lease, done(lease.task.task_id), before=[fetched(lease.task.task_id, 1)])
    assert lost.value.owner == "w2"
    with pytest.raises(LeaseLost):
        await w1.checkpoint(lease, checkpoint(lease.task.task_id, 1))
    assert await w1.renew([lease]) == {lease.entry_id}, "renewing must not steal it back"

    assert await log.length() == before, "a refused write writes nothing"
    assert [lease.entry_id for lease in await w2.pending()] == [taken.entry_id]
    assert await w2.finish(taken, done(taken.task.task_id, actor="w2")) is not None


async def test_a_checkpoint_points_the_index_at_itself_and_renews_the_lease(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    lease = await claim_one(w1)
    task_id = lease.task.task_id
    await age(redis_client, w1, lease, LEASE_MS - 100)
    saved = checkpoint(task_id, 1)
    stream_id = await w1.checkpoint(lease, saved, before=[fetched(task_id, 1)])
    assert stream_id is not None
    assert await w1.checkpoint_ids([task_id, "other"]) == {task_id: stream_id}
    assert await log.read_ids([stream_id]) == {stream_id: saved}
    assert await w2.reclaim() == [], "the checkpoint renewed the lease"


async def test_finish_acks_the_task_and_drops_its_checkpoint_pointer(
    make_queue: MakeQueue, log: EventLog
) -> None:
    w1 = make_queue("w1")
    lease = await claim_one(w1)
    task_id = lease.task.task_id
    await w1.checkpoint(lease, checkpoint(task_id, 1))
    await w1.finish(lease, done(task_id))
    assert await w1.pending() == []
    assert await w1.checkpoint_ids([task_id]) == {}
    assert [type(e.event).__name__ for e in await log.read_range()] == [
        "TaskEnqueued", "CheckpointSaved", "TaskDone",
    ]  # fmt: skip


async def test_a_retried_finish_whose_reply_was_lost_is_not_a_lost_lease(
    make_queue: MakeQueue, log: EventLog
) -> None:
    w1 = make_queue("w1")
    lease = await claim_one(w1)
    event = done(lease.task.task_id)
    assert await w1.finish(lease, event) is not None
    assert await w1.finish(lease, event) is None  # the same call again: already done
    terminal = [e for e in await log.read_range() if e.event.event_id == event.event_id]
    assert len(terminal) == 1


async def test_a_requeued_task_goes_to_the_recovery_lane_with_its_history(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    await w1.enqueue([task(1), task(2)], actor="seed")
    stalled = (await w1.claim(1))[0]
    await age(redis_client, w1, stalled, LEASE_MS + 1)
    [taken] = await w2.reclaim()
    moved = msgspec.structs.replace(taken.task, recoveries=taken.recoveries)
    event = TaskReclaimed(
        actor="w2", task_id=moved.task_id, attempt=1, previous_owner="w1", deliveries=2
    )
    await w2.requeue(taken, [event], moved, LANE_RECOVERY)
    # A quarter of a claim (rounded up) goes to recovered work first, the rest to fresh work.
    recovered, fresh = await w2.claim(2)
    assert fresh.task.task_id == "task-2"
    assert (recovered.lane, recovered.task.task_id) == (LANE_RECOVERY, "task-1")
    assert (recovered.deliveries, recovered.recoveries) == (1, 1)
