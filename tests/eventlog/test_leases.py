"""Leases are PEL entries: renewed by their owner, recovered by others after expiry (moved
to the recovery lane by ``expired`` + ``recover``, as the worker does), fenced."""

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


async def recover_expired(queue: TaskQueue) -> list[Lease]:
    """Move every expired lease to the recovery lane as the worker's recovery pass does
    (its task's recoveries and owners carried along); the leases moved, as read."""
    found, _ = await queue.expired()
    moves = []
    for lease in found:
        owner = lease.previous_owner or "?"
        moved = msgspec.structs.replace(
            lease.task, recoveries=lease.recoveries, owners=(*lease.task.owners, owner)
        )
        event = TaskReclaimed(
            actor=queue.consumer,
            task_id=moved.task_id,
            attempt=moved.attempt,
            previous_owner=owner,
            deliveries=lease.deliveries,
        )
        moves.append((lease, event, moved))
    flags = await queue.recover(moves)
    return [lease for lease, moved in zip(found, flags, strict=True) if moved]


async def test_a_renewed_lease_is_not_recovered(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    lease = await claim_one(w1)
    await age(redis_client, w1, lease, LEASE_MS + 1)
    assert await w1.renew([lease]) == set()
    assert await w2.expired() == ([], None)
    assert await recover_expired(w2) == []
    assert [p.entry_id for p in await w1.pending()] == [lease.entry_id]


async def test_lease_expiry_is_the_servers_idle_time(make_queue: MakeQueue) -> None:
    # The one test that lets real time pass: expiry must follow the server's clock.
    # A lease long enough that a loaded machine's pause between the claim and the first
    # look does not expire it already.
    w1, w2 = make_queue("w1", lease_ms=600), make_queue("w2", lease_ms=600)
    lease = await claim_one(w1)
    assert await recover_expired(w2) == []
    await anyio.sleep(0.8)
    [moved] = await recover_expired(w2)
    assert (moved.entry_id, moved.previous_owner) == (lease.entry_id, "w1")
    assert await w1.pending() == []


async def test_every_recovery_counts_and_the_task_carries_its_owners_along(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queues = [make_queue(f"w{n}", lease_ms=LEASE_MS) for n in range(1, 5)]
    lease = await claim_one(queues[0])
    for n in range(1, 4):
        # The holder stalls; the next worker recovers the task and then claims it itself.
        await age(redis_client, queues[n - 1], lease, LEASE_MS + 1)
        [moved] = await recover_expired(queues[n])
        assert (moved.deliveries, moved.recoveries) == (2, n)
        [lease] = await queues[n].claim(1)
        assert (lease.lane, lease.deliveries, lease.recoveries) == (LANE_RECOVERY, 1, n)
        assert lease.task.owners == tuple(f"w{k}" for k in range(1, n + 1))


async def test_a_stalled_owner_cannot_write_for_a_task_that_was_recovered(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    lease = await claim_one(w1)
    task_id = lease.task.task_id
    await age(redis_client, w1, lease, LEASE_MS + 1)
    assert len(await recover_expired(w2)) == 1
    before = await log.length()

    with pytest.raises(LeaseLost) as lost:
        await w1.finish(lease, done(task_id), before=[fetched(task_id, 1)])
    assert lost.value.owner is None, "the entry is gone: nobody holds it"
    with pytest.raises(LeaseLost):
        await w1.checkpoint(lease, checkpoint(task_id, 1), before=[fetched(task_id, 1)])
    with pytest.raises(LeaseLost):
        await w1.note(lease, [fetched(task_id, 1)])
    assert await w1.renew([lease]) == {lease.entry_id}, "its renew finds the lease lost"
    assert await w1.pending() == [], "renewing must not steal it back"

    assert await log.length() == before, "a refused write writes nothing"
    assert await w1.checkpoint_ids([task_id]) == {}
    [again] = await w2.claim(1)
    assert (again.lane, again.task.task_id) == (LANE_RECOVERY, task_id)
    assert await w2.finish(again, done(task_id, actor="w2")) is not None


async def test_a_checkpoint_points_the_index_at_itself_and_renews_the_lease(
    make_queue: MakeQueue, redis_client: aioredis.Redis, log: EventLog
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    lease = await claim_one(w1)
    task_id = lease.task.task_id
    await age(redis_client, w1, lease, LEASE_MS + 1)
    saved = checkpoint(task_id, 1)
    stream_id = await w1.checkpoint(lease, saved, before=[fetched(task_id, 1)])
    assert stream_id is not None
    assert await w1.checkpoint_ids([task_id, "other"]) == {task_id: stream_id}
    assert await log.read_ids([stream_id]) == {stream_id: saved}
    assert await w2.expired() == ([], None), "the checkpoint renewed the lease"
    assert await recover_expired(w2) == []


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
        "TaskEnqueued",
        "CheckpointSaved",
        "TaskDone",
    ]


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


async def test_a_recovered_task_is_claimed_from_the_recovery_lane_with_its_history(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    w1, w2 = make_queue("w1", lease_ms=LEASE_MS), make_queue("w2", lease_ms=LEASE_MS)
    stalled = await claim_one(w1)
    task_id = stalled.task.task_id
    saved = checkpoint(task_id, 1)
    stream_id = await w1.checkpoint(stalled, saved, before=[fetched(task_id, 1)])
    await age(redis_client, w1, stalled, LEASE_MS + 1)
    assert len(await recover_expired(w2)) == 1
    [recovered] = await w2.claim(1)
    assert (recovered.lane, recovered.task.task_id) == (LANE_RECOVERY, task_id)
    assert (recovered.deliveries, recovered.recoveries) == (1, 1)
    assert recovered.task.owners == ("w1",)
    assert await w2.resume_point(recovered) == (stream_id, saved), "resumes after page 1"
