"""`flush_journals`: what a crawl calls before its workers claim. It flushes every journal
the job's workers left in the data directory, each under its worker's name, and skips one
a live worker holds (that worker flushes its own)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import EventLog, Journal, JournalFlush, TaskQueue, flush_journals, journal_directory
from tests.eventlog.helpers import task
from tests.eventlog.journalling_process import kill_after_journalling

pytestmark = pytest.mark.anyio


async def test_each_left_journal_is_flushed_under_its_worker_s_name(
    redis_client: aioredis.Redis, job: str, stalled_url: str, tmp_path: Path
) -> None:
    holder = TaskQueue(redis_client, job, "w7")
    await holder.enqueue([task(1)], actor="seed")
    [lease] = await holder.claim(1)
    left = journal_directory(tmp_path, "w7", job)
    record = kill_after_journalling(stalled_url, job, left, lease, worker="w7")
    live = Journal(journal_directory(tmp_path, "w8", job))  # a live worker's

    assert await flush_journals(redis_client, job, tmp_path) == {"w7": JournalFlush(applied=1)}
    ids = [entry.event.event_id for entry in await EventLog(redis_client, job).read_range()]
    assert [i for i in ids if i in record.event_ids] == record.event_ids
    assert await flush_journals(redis_client, job, tmp_path) == {"w7": JournalFlush()}
    live.close()
