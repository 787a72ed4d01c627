"""An entry id is unique within its lane only: tasks enqueued by one script call into two
lanes (a recrawl's seed, priority 1, and its other pages) get the same id in each. A worker
that claims both runs both at once, rather than taking the second for the first, leaving it
in its pending list until the periodic re-read of that list finds it (every recrawl had one
lease open that long)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig, save_config
from crawler._politeness import Politeness
from crawler._spider import SiteSpider
from crawler._urls import fingerprint, site_of
from crawler._worker import PENDING_REREAD_SHARE, Worker, WorkerOptions
from crawler.testsite import serve_testsite
from eventlog import JobKeys, Task, TaskQueue

pytestmark = pytest.mark.anyio

LONG_LEASE_MS = 1_200_000
"""Its pending list is re-read once per 200 s: a task found only by that re-read misses
the deadline below (50 s, room for a loaded machine) by far."""


async def test_a_worker_runs_both_tasks_whose_entries_share_an_id_without_waiting(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    async with serve_testsite(pages=20, seed=5) as site:
        urls = [site.url + "/", site.url + "/list/guides?page=1"]
        config = JobConfig(
            seeds=(urls[0],),
            politeness=Politeness(per_host=8),
            obey_robots=False,
            max_depth=0,
            lease_ms=LONG_LEASE_MS,
        )
        await save_config(redis_client, JobKeys(job), config)
        tasks = [
            Task(task_id=fingerprint(url), url=url, site=site_of(url), priority=1 - n)
            for n, url in enumerate(urls)
        ]
        assert await TaskQueue(redis_client, job, "test").enqueue(tasks, actor="test") == [
            True,
            True,
        ]
        lanes = JobKeys(job).lanes
        firsts = [await redis_client.xrange(lane, count=1) for lane in lanes[:2]]
        assert [entries[0][0] for entries in firsts] == [firsts[0][0][0]] * 2, (
            "the two lanes' entries were to share an id (one enqueue, one millisecond)"
        )
        worker = Worker(
            redis_client,
            job,
            "w1",
            config,
            SiteSpider(),
            data_dir=tmp_path,
            options=WorkerOptions(exit_when_done=True),
        )
        deadline = LONG_LEASE_MS / 1000 * float(PENDING_REREAD_SHARE) / 4
        with anyio.fail_after(deadline):
            stats = await worker.run()
    assert stats.tasks_done == 2
