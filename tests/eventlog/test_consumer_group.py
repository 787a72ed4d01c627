"""The work queue's consumer-group semantics: each task to one worker, priority first."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eventlog import LANE_HIGH, LANE_NORMAL, LANE_RECOVERY, EventLog, TaskEnqueued, TaskQueue
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
MakeQueue = Callable[..., TaskQueue]


async def test_enqueued_task_is_claimed_with_its_payload(make_queue: MakeQueue) -> None:
    queue = make_queue("w1")
    assert await queue.enqueue([task(1)], actor="seed") == [True]
    [lease] = await queue.claim(10)
    assert lease.task == task(1)
    assert (lease.lane, lease.deliveries, lease.recoveries) == (LANE_NORMAL, 1, 0)


async def test_enqueue_writes_one_task_enqueued_event_per_new_task(
    make_queue: MakeQueue, log: EventLog
) -> None:
    queue = make_queue("w1")
    assert await queue.enqueue([task(1), task(2), task(1)], actor="seed") == [True, True, False]
    events = [e.event for e in await log.read_range()]
    assert [(type(e), e.task_id) for e in events] == [
        (TaskEnqueued, "task-1"),
        (TaskEnqueued, "task-2"),
    ]


async def test_two_workers_never_get_the_same_task(make_queue: MakeQueue) -> None:
    w1, w2 = make_queue("w1"), make_queue("w2")
    await w1.enqueue([task(n) for n in range(20)], actor="seed")
    first = await w1.claim(7)
    second = await w2.claim(100)
    ids1 = {lease.task.task_id for lease in first}
    ids2 = {lease.task.task_id for lease in second}
    assert len(ids1) == 7 and len(ids2) == 13 and not ids1 & ids2
    assert await w1.claim(1) == []


async def test_high_priority_lane_is_served_first(make_queue: MakeQueue) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(n) for n in range(5)], actor="seed")
    await queue.enqueue([task(100, priority=5)], actor="seed")
    leases = await queue.claim(3)
    assert leases[0].task.task_id == "task-100" and leases[0].lane == LANE_HIGH
    assert [lease.task.task_id for lease in leases[1:]] == ["task-0", "task-1"]


async def test_claimed_tasks_stay_in_the_workers_own_pending_list(make_queue: MakeQueue) -> None:
    # A lost XREADGROUP reply leaves entries in the reader's PEL: re-reading finds them.
    queue = make_queue("w1")
    await queue.enqueue([task(1), task(2)], actor="seed")
    claimed = await queue.claim(10)
    pending = await queue.pending()
    assert {lease.entry_id for lease in pending} == {lease.entry_id for lease in claimed}
    assert all(lease.deliveries == 1 for lease in pending), "a re-read is not a redelivery"
    assert await make_queue("w2").pending() == []


async def test_a_restarted_worker_resuming_its_pending_list_counts_a_delivery(
    make_queue: MakeQueue,
) -> None:
    await make_queue("w1").enqueue([task(1)], actor="seed")
    await make_queue("w1").claim(1)
    [resumed], rest = await make_queue("w1").take_back(100)
    assert rest is None
    assert (resumed.deliveries, resumed.recoveries) == (2, 1)


async def test_a_blocking_claim_returns_at_once_when_work_is_waiting(make_queue: MakeQueue) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(5, block_ms=100)
    assert lease.task.task_id == "task-1"
    assert await queue.claim(5, block_ms=10) == []


async def test_recovered_work_gets_a_quarter_of_each_claim_so_it_never_starves(
    make_queue: MakeQueue,
) -> None:
    w1 = make_queue("w1")
    await w1.enqueue([task(n) for n in range(10)], actor="seed")
    [lost] = await w1.claim(1)
    await w1.requeue(lost, [], lost.task, LANE_RECOVERY)
    w2 = make_queue("w2")
    # An endless frontier would always have fresh work: recovered work is not left behind.
    first = await w2.claim(4)
    assert [lease.lane for lease in first] == [LANE_RECOVERY, LANE_NORMAL, LANE_NORMAL, LANE_NORMAL]


async def test_a_long_pending_list_is_taken_back_a_chunk_at_a_time(make_queue: MakeQueue) -> None:
    queue = make_queue("w1")
    await queue.enqueue([task(n) for n in range(12)], actor="seed")
    held = await queue.claim(12)
    chunks, after = [], None
    while True:
        leases, after = await queue.take_back(5, after)
        chunks.append([lease.entry_id for lease in leases])
        if after is None:
            break
    assert [len(chunk) for chunk in chunks] == [5, 5, 2]
    taken = [entry for chunk in chunks for entry in chunk]
    assert taken == [lease.entry_id for lease in held], "each once, in order"
