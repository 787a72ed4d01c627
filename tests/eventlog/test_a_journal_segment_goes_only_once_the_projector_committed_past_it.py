"""A journal segment is deleted once the projector has committed every write in it, not
when the store acknowledged them: until then a lost store could still need it."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import Journal, TaskQueue, publish_projector_position
from tests.eventlog.helpers import checkpoint, done, fetched, task

pytestmark = pytest.mark.anyio
SEGMENT_BYTES = 600  # a few writes a segment


async def test_a_segment_waits_for_the_projector_s_commit(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    journal = Journal(tmp_path, fsync="never", segment_bytes=SEGMENT_BYTES)
    queue = TaskQueue(redis_client, job, "w1", journal=journal)
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(1)
    task_id = lease.task.task_id
    written = []
    for page in range(1, 13):
        saved = await queue.checkpoint(
            lease, checkpoint(task_id, page), before=[fetched(task_id, page)]
        )
        assert saved is not None
        written.append(saved)
    segments = journal.segment_count
    assert segments >= 3

    # Acknowledged by the store, nothing committed: every segment stays.
    assert await queue.drop_committed_journal() == 0
    await publish_projector_position(redis_client, queue.keys, "0-1")
    assert await queue.drop_committed_journal() == 0

    # Committed up to the middle write: the segments wholly before it go, no other.
    middle = written[len(written) // 2]
    await publish_projector_position(redis_client, queue.keys, middle)
    dropped = await queue.drop_committed_journal()
    assert 0 < dropped < segments
    left = sorted(p.name for p in tmp_path.glob("*.journal"))
    assert len(left) == segments - dropped
    assert journal.unsettled() == []

    # Committed past the last one: the journal is empty, and goes on in a new segment.
    await publish_projector_position(redis_client, queue.keys, written[-1])
    assert await queue.drop_committed_journal() == segments - dropped
    assert list(tmp_path.glob("*.journal")) == []
    await queue.finish(lease, done(task_id))
    assert len(list(tmp_path.glob("*.journal"))) == 1
