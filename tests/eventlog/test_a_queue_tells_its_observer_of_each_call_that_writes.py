"""A queue's observer is told of every call that writes: each fenced step (before it is
sent and once it went through), an enqueue, a renewal, a recovery pass, a control event;
a step refused for a lost lease is announced but never reported as done."""

from __future__ import annotations

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    LeaseLost,
    RetryScheduled,
    SitePaused,
    SiteResumed,
    TaskAborted,
    TaskQueue,
    TaskReclaimed,
)
from tests.eventlog.helpers import RecordingObserver, age, checkpoint, done, fetched, task

pytestmark = pytest.mark.anyio
LEASE_MS = 10_000


async def test_each_writing_call_of_a_queue_reaches_its_observer(
    redis_client: aioredis.Redis, job: str
) -> None:
    seen = RecordingObserver()
    queue = TaskQueue(redis_client, job, "w1", lease_ms=LEASE_MS, observer=seen)
    assert await queue.enqueue([task(1), task(2), task(3), task(1)], actor="seed") == [
        True,
        True,
        True,
        False,
    ]
    assert seen.calls == [("enqueued", [True, True, True, False])]

    one, two, three = sorted(await queue.claim(3), key=lambda lease: lease.task.task_id)
    await queue.note(one, [fetched("task-1", 1)])
    await queue.checkpoint(one, checkpoint("task-1", 1), before=[fetched("task-1", 2)])
    assert await queue.renew([one, two]) == set()
    retry = RetryScheduled(actor="w1", task_id="task-2", attempt=1, delay_s=60, reason="503")
    await queue.delay(two, [retry], msgspec.structs.replace(two.task, attempt=2), 60)
    await queue.finish(one, done("task-1"))
    paused = SitePaused(actor="op", site=three.task.site, reason="maintenance")
    await queue.control(paused)
    assert await queue.park(three)
    await queue.control(SiteResumed(actor="op", site=three.task.site, reason="done"))
    assert seen.calls[1:] == [
        ("settling", "note"),
        ("settled", ("note", ["PageFetched"])),
        ("settling", "ckpt"),
        ("settled", ("ckpt", ["PageFetched", "CheckpointSaved"])),
        ("renewed", (2, [])),
        ("settling", "delay"),
        ("settled", ("delay", ["RetryScheduled"])),
        ("settling", "finish"),
        ("settled", ("finish", ["TaskDone"])),
        ("controlled", "SitePaused"),
        ("settling", "park"),
        ("settled", ("park", [])),
        ("controlled", "SiteResumed"),
    ]


async def test_a_recovery_pass_and_a_refused_step_reach_the_observer_as_what_they_wrote(
    redis_client: aioredis.Redis, job: str
) -> None:
    owner_seen, rescuer_seen = RecordingObserver(), RecordingObserver()
    owner = TaskQueue(redis_client, job, "w1", lease_ms=LEASE_MS, observer=owner_seen)
    await owner.enqueue([task(1)], actor="seed")
    [lease] = await owner.claim(1)
    await age(redis_client, owner, lease, LEASE_MS + 1)  # w1 stalled past its lease
    rescuer = TaskQueue(redis_client, job, "w2", lease_ms=LEASE_MS, observer=rescuer_seen)
    [found], _ = await rescuer.expired()
    reclaimed = TaskReclaimed(
        actor="w2", task_id="task-1", attempt=1, previous_owner="w1", deliveries=2
    )
    moved = msgspec.structs.replace(found.task, recoveries=found.recoveries)
    assert await rescuer.recover([(found, reclaimed, moved)]) == [True]
    # A second move of the same lease moves nothing: the observer is told of no event.
    aborted = TaskAborted(actor="w2", task_id="task-1", attempt=1, reason="limit", deliveries=2)
    assert await rescuer.recover([(found, aborted, None)]) == [False]
    assert rescuer_seen.calls == [("recovered", ["TaskReclaimed"]), ("recovered", [])]

    with pytest.raises(LeaseLost):
        await owner.finish(lease, done("task-1"))
    assert await owner.renew([lease]) == {lease.entry_id}
    assert owner_seen.calls[1:] == [("settling", "finish"), ("renewed", (1, [lease.entry_id]))]
