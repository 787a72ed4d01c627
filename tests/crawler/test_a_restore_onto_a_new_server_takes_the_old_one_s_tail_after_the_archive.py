"""`restore_job(..., tail_from=old)`: a job moved onto a new, empty server gets the old
server's log after the archive's committed position, with the same stream IDs, folded into
what it restores (a task done only in that tail is not queued again)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from eventlog import (
    EventLog,
    JobKeys,
    Task,
    TaskClaimed,
    TaskDone,
    TaskQueue,
    connect,
    create_identity,
)
from projector import restore_job
from tests.crawler.conftest import run_projector
from tests.valkey_process import running_valkey

pytestmark = pytest.mark.anyio


def task(n: int) -> Task:
    return Task(task_id=f"{n:016x}", url=f"http://s.example/{n}", site="s.example")


async def test_the_old_server_s_tail_comes_with_its_ids(
    redis_client: aioredis.Redis,
    job: str,
    data_dir: Path,
    valkey_url: str,
    make_queue: Callable[..., TaskQueue],
    tmp_path: Path,
) -> None:
    keys = JobKeys(job)
    await create_identity(redis_client, keys)
    await make_queue("w1").enqueue([task(n) for n in range(4)], actor="test")
    await run_projector(valkey_url, job, data_dir)
    log = EventLog(redis_client, keys)
    done = task(1).task_id
    tail = await log.append_many(
        [
            TaskClaimed(actor="w1", task_id=done, attempt=1),
            TaskDone(actor="w1", task_id=done, attempt=1),
        ]
    )
    with running_valkey(tmp_path / "new") as server:
        async with connect(server.url) as new:
            restored = await restore_job(new, data_dir, job, tail_from=redis_client)
            copied = [entry.stream_id for entry in await EventLog(new, keys).read_range()]
            lanes = sum([int(await new.xlen(lane)) for lane in keys.lanes])
    assert restored.tail_events == 2
    assert copied == tail
    assert (restored.tasks, lanes) == (4, 3)
