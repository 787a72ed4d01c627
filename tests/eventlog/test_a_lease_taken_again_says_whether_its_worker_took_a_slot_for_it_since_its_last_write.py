"""A lease taken again (a restart's take-back, an expired lease read for recovery) says
whether its worker took a politeness slot for the task after the task's last write: the
slot records the task in the worker's fetches started in the same script, the write of the
page clears it (any mode but a note). A task whose lease only waited for its slot, or
whose page was written, had no request of it on its way."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis.asyncio as aioredis

from eventlog import HostSlots, Task, TaskQueue
from tests.eventlog.helpers import checkpoint, fetched

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]
SITE = "http://site.test"
HOST = "site.test"


def _task(task_id: str) -> Task:
    return Task(task_id=task_id, url=f"{SITE}/{task_id}", site=SITE)


async def _slot_for(redis: aioredis.Redis, queue: TaskQueue, task_id: str) -> None:
    slots = HostSlots(redis, queue.keys, queue.consumer)
    answer = await slots.acquire(
        HOST,
        f"token-{task_id}",
        per_host=10,
        delay_ms=0,
        ttl_ms=30_000,
        max_wait_ms=100,
        task_id=task_id,
    )
    assert answer.wait_ms == 0


async def test_a_take_back_marks_only_the_tasks_with_a_slot_taken_since_their_last_write(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([_task(t) for t in ("sent", "written", "waited", "noted")], actor="s")
    leases = {lease.task.task_id: lease for lease in await queue.claim(10)}
    for task_id in ("sent", "written", "noted"):
        await _slot_for(redis_client, queue, task_id)
    await queue.checkpoint(
        leases["written"], checkpoint("written", 1), before=[fetched("written", 1)]
    )
    await queue.note(leases["noted"], [fetched("noted", 1)])  # a note clears nothing
    await _slot_for(redis_client, queue, "gone")  # a task no longer w1's

    restarted = make_queue("w1")
    taken = {lease.task.task_id: lease for lease in await restarted.take_back_all()}
    assert {t: lease.unrecorded_fetch for t, lease in taken.items()} == {
        "sent": True,
        "written": False,
        "waited": False,
        "noted": True,
    }
    # What is no longer w1's is cleared: a later take-back must not count it.
    started = await redis_client.hkeys(queue.keys.fetches_started("w1"))
    assert sorted(started) == [b"noted", b"sent"]


async def test_an_expired_lease_read_for_recovery_says_the_same(
    make_queue: MakeQueue, redis_client: aioredis.Redis
) -> None:
    queue = make_queue("w1")
    await queue.enqueue([_task(t) for t in ("sent", "waited")], actor="s")
    await queue.claim(10)
    await _slot_for(redis_client, queue, "sent")
    expired, _ = await make_queue("w2").expired(10, min_idle_ms=0)
    assert {lease.task.task_id: lease.unrecorded_fetch for lease in expired} == {
        "sent": True,
        "waited": False,
    }
