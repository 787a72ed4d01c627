"""The no-op sink of the benchmarks: a queue that records no events still hands out work."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from eventlog import CheckpointSaved, Counts, Cursor, EventLog, TaskDone, TaskQueue
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio


async def test_a_queue_without_events_leases_and_settles_but_appends_nothing(
    make_queue: Callable[..., TaskQueue], log: EventLog
) -> None:
    queue = make_queue("w1", record_events=False)
    assert await queue.enqueue([task(1), task(2), task(1)], actor="seed") == [True, True, False]
    first, second = await queue.claim(10)
    saved = CheckpointSaved(
        actor="w1", task_id=first.task.task_id, attempt=1, cursor=Cursor(page=1), counts=Counts()
    )
    await queue.checkpoint(first, saved)
    for lease in (first, second):
        await queue.finish(lease, TaskDone(actor="w1", task_id=lease.task.task_id, attempt=1))
    assert await queue.remaining() == 0
    assert await log.read_range() == []
    assert await queue.checkpoint_ids([first.task.task_id]) == {}
