"""A worker SIGKILLed after journalling a write, before the store answered: started again
under its name, its journal's events reach the log once, fenced per lease (a task taken
over meanwhile gets a `TaskOrphaned`, once, and none of the old events)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    WORKERS_GROUP,
    CheckpointSaved,
    EventLog,
    Journal,
    Lease,
    PageFetched,
    TaskOrphaned,
    TaskQueue,
)
from eventlog._journal import JournalSettle, decode_records
from tests.eventlog.helpers import task

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 20


def _journalled(directory: Path) -> list[JournalSettle]:
    """The writes on disk, read without opening the journal (its writer is alive)."""
    found: list[JournalSettle] = []
    for segment in sorted(directory.glob("*.journal")):
        records, _ = decode_records(segment.read_bytes())
        found += [r for r in records if isinstance(r, JournalSettle)]
    return found


def kill_after_journalling(url: str, job: str, directory: Path, lease: Lease) -> JournalSettle:
    """Run the journalling worker against ``url`` (a store that never answers), wait for its
    write to be journalled, SIGKILL it; the journalled write."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.eventlog.journalling_process", url, job, "w1",
         str(directory), msgspec.json.encode(lease).decode()],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not (written := _journalled(directory)):
            assert child.poll() is None, "the worker exited before it journalled"
            assert time.monotonic() < deadline, "nothing journalled in time"
            time.sleep(0.02)
        assert child.poll() is None  # still waiting for the store's reply
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    [record] = written
    return record


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
