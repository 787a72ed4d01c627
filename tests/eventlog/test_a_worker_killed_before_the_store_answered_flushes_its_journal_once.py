"""A worker SIGKILLed after journalling a write, before the store answered: started again
under its name, its journal's events reach the log once, fenced per lease (a task taken
over meanwhile gets a `TaskOrphaned`, once, and none of the old events)."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    CheckpointSaved,
    EventLog,
    Journal,
    PageFetched,
    TaskOrphaned,
    TaskQueue,
)
from tests.eventlog.helpers import task
from tests.eventlog.journalling_process import kill_after_journalling

pytestmark = pytest.mark.anyio
DEADLINE_S = 60


async def _events(log: EventLog) -> list[object]:
    return [entry.event for entry in await log.read_after("0-0", 10_000)]


async def test_the_journal_s_events_reach_the_log_once(
    redis_client: aioredis.Redis, job: str, stalled_url: str, tmp_path: Path
) -> None:
    holder = TaskQueue(redis_client, job, "w1")
    await holder.enqueue([task(1)], actor="seed")
    [lease] = await holder.claim(1)
    record = kill_after_journalling(stalled_url, job, tmp_path / "journal", lease)
    assert record.mode == "ckpt" and record.entry_id == lease.entry_id
    shutil.copytree(tmp_path / "journal", tmp_path / "copy")  # the same journal, twice

    restarted = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    with anyio.fail_after(DEADLINE_S):
        flushed = await restarted.flush_journal()
    assert (flushed.applied, flushed.present, flushed.orphaned) == (1, 0, 0)
    assert await restarted.flush_journal() == type(flushed)()  # nothing left unacknowledged
    # Flushed again from a copy taken before (a worker killed before its acks reached the
    # disk): found in the log, not sent again, whatever the dedup window.
    again = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "copy"))
    assert (await again.flush_journal()).present == 1

    events = await _events(restarted.log)
    ids = [e.event_id for e in events if isinstance(e, PageFetched | CheckpointSaved)]
    assert ids == record.event_ids  # each once, in order
    assert (await restarted.checkpoint_ids([lease.task.task_id])) == {
        lease.task.task_id: (await restarted.log.read_after("0-0", 10_000))[-1].stream_id
    }


async def test_a_task_taken_over_meanwhile_gets_its_old_events_orphaned_once(
    redis_client: aioredis.Redis, job: str, stalled_url: str, tmp_path: Path
) -> None:
    holder = TaskQueue(redis_client, job, "w1")
    await holder.enqueue([task(1)], actor="seed")
    [lease] = await holder.claim(1)
    record = kill_after_journalling(stalled_url, job, tmp_path / "journal", lease)
    shutil.copytree(tmp_path / "journal", tmp_path / "copy")
    # Its lease expired and w2 took the task over, as a worker's reclaim does.
    await redis_client.execute_command(
        "XCLAIM", holder.keys.tasks(lease.lane), WORKERS_GROUP, "w2", 0, lease.entry_id
    )

    restarted = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    with anyio.fail_after(DEADLINE_S):
        flushed = await restarted.flush_journal()
    assert (flushed.applied, flushed.present, flushed.orphaned) == (0, 0, 1)
    again = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "copy"))
    assert (await again.flush_journal()).orphaned == 1  # counted, not recorded again

    events = await _events(restarted.log)
    assert not {e.event_id for e in events} & set(record.event_ids)  # never applied
    [orphan] = [e for e in events if isinstance(e, TaskOrphaned)]
    assert (orphan.task_id, orphan.entry_id, orphan.step) == (
        lease.task.task_id, lease.entry_id, "ckpt",
    )  # fmt: skip
    assert (orphan.owner, orphan.events, orphan.actor) == ("w2", 2, "w1")
    assert await restarted.checkpoint_ids([lease.task.task_id]) == {}


async def test_a_write_the_trimmed_log_cannot_be_searched_for_is_counted_unsure(
    redis_client: aioredis.Redis, job: str, stalled_url: str, tmp_path: Path
) -> None:
    holder = TaskQueue(redis_client, job, "w1")
    await holder.enqueue([task(1), task(2)], actor="seed")
    [lease, _] = await holder.claim(2)
    kill_after_journalling(stalled_url, job, tmp_path / "journal", lease)
    # The projector committed and trimmed past where the write would be.
    last = (await holder.log.read_after("0-0", 10))[-1].stream_id
    assert await holder.log.trim_before(last) > 0

    restarted = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    flushed = await restarted.flush_journal()
    assert (flushed.applied, flushed.unsure) == (1, 1)
