"""`TaskQueue.store_down` / `store_back`: while the store is taken for down, a checkpoint
or an end is journalled and not sent (its call returns at once); once it is back, the
journal is flushed in the order it was written, fenced per lease: a task another worker
took over meanwhile gets its writes orphaned, never applied."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    CheckpointSaved,
    Counts,
    EventLog,
    Journal,
    JournalFlush,
    TaskDone,
    TaskOrphaned,
    TaskQueue,
    journal_directory,
)
from tests.eventlog.helpers import checkpoint, task

pytestmark = pytest.mark.anyio


def done(task_id: str) -> TaskDone:
    return TaskDone(actor="w1", task_id=task_id, attempt=1, reason="HTTP 200", counts=Counts())


async def test_the_writes_wait_in_the_journal_and_go_in_order_fenced(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    journal = Journal(journal_directory(tmp_path, "w1", job), fsync="never")
    queue = TaskQueue(redis_client, job, "w1", journal=journal)
    await queue.enqueue([task(1), task(2)], actor="seed")
    kept, lost = await queue.claim(2)
    log = EventLog(redis_client, job)
    enqueued = len(await log.read_range())

    queue.store_down()
    assert queue.is_down
    assert await queue.checkpoint(kept, checkpoint(kept.task.task_id, 1)) is None
    assert await queue.finish(kept, done(kept.task.task_id)) is None
    assert await queue.finish(lost, done(lost.task.task_id)) is None
    assert len(await log.read_range()) == enqueued  # nothing sent
    assert len(journal.unsettled()) == 3

    # Meanwhile the second task's lease expired and w2 took it over, as a reclaim does.
    await redis_client.execute_command(
        "XCLAIM", queue.keys.tasks(lost.lane), WORKERS_GROUP, "w2", 0, lost.entry_id
    )

    assert await queue.store_back() == JournalFlush(applied=2, orphaned=1)
    assert not queue.is_down
    events = [entry.event for entry in await log.read_range()][enqueued:]
    kinds = [(type(e).__name__, e.task_id) for e in events]
    first = kept.task.task_id
    assert kinds[:2] == [("CheckpointSaved", first), ("TaskDone", first)]
    assert isinstance(events[0], CheckpointSaved)
    orphaned = [e for e in events if isinstance(e, TaskOrphaned)]
    assert [e.task_id for e in orphaned] == [lost.task.task_id]
    assert not [e for e in events if isinstance(e, TaskDone) and e.task_id == lost.task.task_id]
    journal.close()
