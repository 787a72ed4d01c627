"""After the store lost the job and a restore put its tasks back as new entries, a worker's
journal gives back the writes the lost store had acknowledged: a write of a task nobody
claimed since the restore is applied to the restored entry (its checkpoint, its end, the
links its page found), one of a task claimed since is recorded once as orphaned and never
applied. The job's keys are really deleted from a real server, as a FLUSHALL would."""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    LANE_NORMAL,
    CheckpointSaved,
    EventLog,
    JobIdentity,
    Journal,
    StoreLost,
    TaskDone,
    TaskOrphaned,
    TaskQueue,
    clear_job_keys,
    create_identity,
    record_restore,
    restart_log,
    restore_lanes,
    set_identity,
)
from tests.eventlog.helpers import checkpoint, done, fetched, task

pytestmark = pytest.mark.anyio
DEADLINE_S = 60


async def test_writes_of_before_the_loss_come_back_unless_claimed_since(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    identity = await create_identity(redis_client, TaskQueue(redis_client, job, "seed").keys)
    seeder = TaskQueue(redis_client, job, "seed")
    await seeder.enqueue([task(1), task(2), task(3)], actor="seed")
    w1 = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    w1.epoch = identity.epoch
    leases = {lease.task.task_id: lease for lease in await w1.claim(3)}
    # The restore goes on from here: what follows is acknowledged, then lost.
    position = await w1.log.append(checkpoint("task-9", 0, actor="seed")) or "0-0"
    child = msgspec.structs.replace(task(4), parent_task_id="task-1")
    await w1.enqueue([child], actor="w1")
    await w1.checkpoint(leases["task-1"], checkpoint("task-1", 1), before=[fetched("task-1", 1)])
    await w1.finish(leases["task-2"], done("task-2"), before=[fetched("task-2", 1)])
    await w1.checkpoint(leases["task-3"], checkpoint("task-3", 1), before=[fetched("task-3", 1)])
    w1.journal.close()  # type: ignore[union-attr]

    # The store loses the job; a restore puts the three tasks back, at a new epoch.
    keys = w1.keys
    await clear_job_keys(redis_client, keys, keep=[])
    await restart_log(redis_client, keys, position)
    await restore_lanes(redis_client, keys, [(LANE_NORMAL, task(n)) for n in (1, 2, 3)])
    await record_restore(redis_client, keys, 2, position)
    await set_identity(redis_client, keys, JobIdentity(job_id=identity.job_id, epoch=2))
    # A worker of the new epoch claims one task before the journal is flushed.
    w2 = TaskQueue(redis_client, job, "w2")
    [taken] = await w2.claim(1)
    assert taken.task.task_id == "task-1"  # the first in the lane: it is claimed since

    flushing = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    with anyio.fail_after(DEADLINE_S):
        flushed = await flushing.flush_journal()
    assert (flushed.applied, flushed.orphaned, flushed.present) == (2, 1, 0)
    flushing.journal.close()  # type: ignore[union-attr]
    again = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    assert (await again.flush_journal()).total == 0  # given back once

    events = [entry.event for entry in await EventLog(redis_client, keys).read_after(position)]
    orphaned = [e for e in events if isinstance(e, TaskOrphaned)]
    assert [(e.task_id, e.owner) for e in orphaned] == [("task-1", "w2")]
    assert not any(isinstance(e, CheckpointSaved) and e.task_id == "task-1" for e in events)
    assert any(isinstance(e, TaskDone) and e.task_id == "task-2" for e in events)
    assert (await flushing.checkpoint_ids(["task-3"])).keys() == {"task-3"}
    # task-2 ended: its restored entry is gone; task-3 waits, resuming after its page 1.
    left = [lease.task.task_id for lease in await w2.claim(10)]
    assert sorted(left) == ["task-3", "task-4"]  # task-1's link is enqueued again
    [resume] = [lease for lease in await w2.pending() if lease.task.task_id == "task-3"]
    point = await w2.resume_point(resume)
    assert point is not None and isinstance(point[1], CheckpointSaved)
    assert point[1].cursor.page == 1


async def test_a_worker_of_the_old_epoch_is_refused_by_the_script(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    queue = TaskQueue(redis_client, job, "w1", journal=Journal(tmp_path / "journal"))
    identity = await create_identity(redis_client, queue.keys)
    queue.epoch = identity.epoch
    await queue.enqueue([task(1)], actor="seed")
    [lease] = await queue.claim(1)
    await queue.checkpoint(lease, checkpoint("task-1", 1))
    # Restored meanwhile: the lease itself is still there, only the epoch moved on.
    await set_identity(redis_client, queue.keys, JobIdentity(job_id=identity.job_id, epoch=2))
    length = await redis_client.xlen(queue.keys.events)
    with pytest.raises(StoreLost, match="epoch 1 -> 2"):
        await queue.checkpoint(lease, checkpoint("task-1", 2))
    assert await redis_client.xlen(queue.keys.events) == length
    assert queue.journal is not None and len(queue.journal.unsettled()) == 1
    # The identity gone (a FLUSHALL the worker has not noticed yet): refused as well.
    await redis_client.delete(queue.keys.identity)
    with pytest.raises(StoreLost, match="identity key is gone"):
        await queue.finish(lease, done("task-1"))
    assert await redis_client.xlen(queue.keys.events) == length
