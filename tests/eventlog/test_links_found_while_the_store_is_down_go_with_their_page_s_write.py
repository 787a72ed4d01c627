"""The links a page found while the store is taken for down do not hold the task up: they
are journalled with the page's write (`JournalSettle.enqueued`) and enqueued by the flush
once the store is back, before that write, deduplicated as any enqueue (a URL seen
meanwhile makes no second task)."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import CheckpointSaved, EventLog, Journal, TaskEnqueued, TaskQueue, journal_directory
from tests.eventlog.helpers import checkpoint, task

pytestmark = pytest.mark.anyio


async def test_links_are_enqueued_by_the_flush_before_the_page_s_write(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    journal = Journal(journal_directory(tmp_path, "w1", job), fsync="never")
    queue = TaskQueue(redis_client, job, "w1", journal=journal)
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(1)
    log = EventLog(redis_client, job)
    before = len(await log.read_range())

    queue.store_down()
    links = [msgspec.structs.replace(task(n), parent_task_id="task-1") for n in (2, 3)]
    with anyio.fail_after(5):  # at once: it does not wait for the store
        new = await queue.enqueue(links, actor="w1")
    assert new == [False, False]  # not known while the store is down
    assert await queue.checkpoint(lease, checkpoint("task-1", 1)) is None
    assert len(await log.read_range()) == before  # nothing sent
    [record] = journal.unsettled()
    assert len(record.enqueued) == 1
    # Another page linked task-3 meanwhile, once the store answered for it.
    await TaskQueue(redis_client, job, "w2").enqueue([task(3)], actor="w2")

    await queue.store_back()
    events = [entry.event for entry in await log.read_range()][before:]
    kinds = [(type(e).__name__, e.task_id) for e in events]
    assert kinds == [
        ("TaskEnqueued", "task-3"),  # w2's
        ("TaskEnqueued", "task-2"),  # the flush's, before the page's write
        ("CheckpointSaved", "task-1"),
    ]
    assert isinstance(events[1], TaskEnqueued) and isinstance(events[2], CheckpointSaved)
    claimed = sorted(lease.task.task_id for lease in await queue.claim(10))
    assert claimed == ["task-2", "task-3"]  # task-3 once
