"""A worker told to batch its script calls (``--batch-script-calls``) sends the calls its
tasks make while one is in flight together, and crawls the site as one that does not:
every page once, every task ended through its queue."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._spider import SiteSpider
from crawler._worker import Worker, WorkerOptions, worker_queue
from crawler.testsite import serve_testsite

pytestmark = pytest.mark.anyio
PAGES = 60


async def test_a_batching_worker_crawls_every_page_once_and_shares_round_trips(
    redis_client: aioredis.Redis, job: str, tmp_path: Path, start_job: Callable[..., Any]
) -> None:
    async with serve_testsite(pages=PAGES, seed=5) as site:
        config = await start_job([site.url + "/"], obey_robots=False)
        queue = worker_queue(redis_client, job, "w1", config)
        options = WorkerOptions(exit_when_done=True, concurrency=16, batch_script_calls=True)
        worker = Worker(
            redis_client, job, "w1", config, SiteSpider(), data_dir=tmp_path,
            options=options, queue=queue,
        )  # fmt: skip
        with anyio.fail_after(60):
            stats = await worker.run()
    # Each task one page, the seed and every link it found: none fetched twice.
    assert stats.pages == stats.tasks_done == stats.enqueued + 1 >= PAGES
    assert stats.tasks_failed == stats.aborted == 0
    batcher = queue.batcher
    assert not batcher.is_running
    # Every script call went alone or in a batch, and some shared a round trip.
    assert batcher.calls > batcher.batches > 0
