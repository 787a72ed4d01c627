"""`restore_job` on a real store: refused while a worker of the job lives; once the job's keys
are really gone, it puts each unfinished task back once (a running one in the recovery
lane, after its `TaskReclaimed`), marks every task seen, and raises the epoch, so that a
process that saw the old one stops (`check_identity`) and its old lease is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
import redis.asyncio as aioredis

from eventlog import (
    LANE_RECOVERY,
    CheckpointSaved,
    Cursor,
    EventLog,
    JobKeys,
    LeaseLost,
    OperatorRefused,
    RetryScheduled,
    StoreLost,
    Task,
    TaskClaimed,
    TaskDone,
    TaskQueue,
    check_identity,
    clear_job_keys,
    create_identity,
    hold_worker_name,
    is_seen,
)
from projector import RUNNING, Store, read_committed, restore_job
from tests.crawler.conftest import run_projector

pytestmark = pytest.mark.anyio


def task(n: int) -> Task:
    return Task(task_id=f"{n:016x}", url=f"http://s.example/{n}", site="s.example")


async def test_restore_refuses_live_workers_then_rebuilds_and_fences(
    redis_client: aioredis.Redis,
    job: str,
    data_dir: Path,
    valkey_url: str,
    make_queue: Callable[..., TaskQueue],
) -> None:
    keys = JobKeys(job)
    identity = await create_identity(redis_client, keys)
    queue = make_queue("w1")
    await queue.enqueue([task(n) for n in range(6)], actor="test")
    leases = await queue.claim(3)
    assert len(leases) == 3
    log = EventLog(redis_client, keys)
    done, running, retried = leases[0], leases[1], leases[2]
    retry = RetryScheduled(
        actor="w1", task_id=retried.task.task_id, attempt=1, delay_s=600.0, reason="503"
    )
    await log.append_many(
        [
            TaskClaimed(actor="w1", task_id=done.task.task_id, attempt=1),
            TaskDone(actor="w1", task_id=done.task.task_id, attempt=1),
            TaskClaimed(actor="w1", task_id=running.task.task_id, attempt=1),
            CheckpointSaved(
                actor="w1", task_id=running.task.task_id, attempt=1, cursor=Cursor(page=2)
            ),
            TaskClaimed(actor="w1", task_id=retried.task.task_id, attempt=1),
            retry,
        ]
    )
    await run_projector(valkey_url, job, data_dir)

    async with hold_worker_name(redis_client, keys, "w1"):  # a live worker w1
        with pytest.raises(OperatorRefused, match="w1"):
            await restore_job(redis_client, data_dir, job)

    await clear_job_keys(redis_client, keys, keep=())  # the store loses every key of the job
    restored = await restore_job(redis_client, data_dir, job)
    assert (restored.tasks, restored.queued, restored.running) == (6, 4, 1)
    assert restored.delayed == 1
    held = await redis_client.zrange(keys.delayed, 0, -1, withscores=True)
    assert [score for _, score in held] == [int((retry.at + retry.delay_s) * 1000)]
    assert restored.epoch == identity.epoch + 1

    lanes: dict[str, int] = {}
    for lane, key in enumerate(keys.lanes):
        for _, fields in await redis_client.xrange(key):
            lanes[msgspec.msgpack.decode(fields[1], type=Task).task_id] = lane
    assert len(lanes) == 4
    assert sum(1 for lane in lanes.values() if lane == LANE_RECOVERY) == 1
    for n in range(6):
        assert await is_seen(redis_client, keys, task(n).task_id)

    with pytest.raises(StoreLost, match="restored meanwhile"):
        await check_identity(redis_client, keys, identity)
    with pytest.raises(LeaseLost):
        await queue.finish(running, TaskDone(actor="w1", task_id=running.task.task_id, attempt=1))

    await run_projector(valkey_url, job, data_dir)
    _, state = read_committed(Store(data_dir, job))
    assert state.tasks[running.task.task_id].status != RUNNING
    assert state.tasks[running.task.task_id].recoveries == 1
    assert state.job.anomalies == {}
