"""``retry_tasks``, the one retry under ``crawlog retry`` and the console's Retry buttons:
``RETRY_BATCH`` tasks a script call, each ended attempt retried once, a second retry of it
refused and reported back."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler import JobConfig
from crawler.ops import RETRY_BATCH, OpenJob, retry_tasks
from eventlog import JobKeys
from projector import FAILED, Store, TaskState

pytestmark = pytest.mark.anyio
SITE = "http://site.test"


async def _script_calls(client: aioredis.Redis) -> int:
    stats = await client.info("commandstats")
    return sum(
        int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval")
    )


async def test_a_retry_of_more_tasks_than_a_batch_retries_each_once_a_batch_a_call(
    redis_client: aioredis.Redis, job: str, keys: JobKeys, tmp_path: Path
) -> None:
    opened = OpenJob(redis_client, keys, JobConfig(seeds=(SITE,)), Store(tmp_path, job))
    tasks = [
        TaskState(task_id=f"t{i:04d}", url=f"{SITE}/p/{i}", site=SITE, status=FAILED)
        for i in range(RETRY_BATCH + 3)
    ]

    retried, refused = await retry_tasks(opened, tasks, "the proxy is fixed", "alice")
    assert (retried, refused) == (tasks, [])
    assert await redis_client.xlen(keys.events) == len(tasks)  # one TaskRetried each

    before = await _script_calls(redis_client)
    retried, refused = await retry_tasks(opened, tasks, "once more", "bob")
    assert await _script_calls(redis_client) - before == 2  # 503 tasks: two batches
    assert (retried, refused) == ([], tasks)
    assert await redis_client.xlen(keys.events) == len(tasks)  # nothing written twice
