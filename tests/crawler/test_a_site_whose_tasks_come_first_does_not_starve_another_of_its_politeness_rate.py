"""Two sites, each limited by the job's delay: the tasks of the one enqueued first do not
take every place of a worker while they wait for their site's politeness slots. The other
site is crawled at its own rate meanwhile, not once the first one's queue has run dry."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._politeness import Politeness
from crawler._spider import SiteSpider
from crawler._worker import Worker, WorkerOptions
from crawler.testsite import serve_testsite

pytestmark = pytest.mark.anyio
DELAY_S = 0.1
BIG_TASKS = 60
SMALL_TASKS = 10
CONCURRENCY = 8
"""Fewer places than the big site's tasks: each of them would sit in one, waiting."""


async def test_the_second_site_s_pages_are_fetched_while_the_first_site_s_tasks_wait(
    redis_client: aioredis.Redis, job: str, tmp_path: Path, start_job: Callable[..., Any]
) -> None:
    async with (
        serve_testsite(pages=BIG_TASKS, seed=1) as big,
        serve_testsite(pages=SMALL_TASKS, seed=2) as small,
    ):
        seeds = sorted(big.reachable)[:BIG_TASKS] + sorted(small.reachable)[:SMALL_TASKS]
        config = await start_job(
            seeds,
            max_depth=0,
            obey_robots=False,
            politeness=Politeness(per_host=2, delay_s=DELAY_S),
        )
        worker = Worker(
            redis_client,
            job,
            "w1",
            config,
            SiteSpider(),
            data_dir=tmp_path,
            options=WorkerOptions(concurrency=CONCURRENCY, exit_when_done=True),
        )
        with anyio.fail_after(60):
            stats = await worker.run()
    assert stats.tasks_done == BIG_TASKS + SMALL_TASKS
    start = min(r.time for r in big.requests + small.requests)
    small_took = max(r.time for r in small.requests) - start
    big_took = max(r.time for r in big.requests) - start
    # At its own limit the small site's pages take (SMALL_TASKS - 1) delays, the big site's
    # (BIG_TASKS - 1); behind the big site's queue the small site
    # would end with it. Measured against the big site's own time, which a loaded machine
    # stretches as much, not against a fixed number of seconds.
    allowed = (SMALL_TASKS - 1) * DELAY_S
    assert small_took < big_took / 2, (
        f"the small site's {SMALL_TASKS} pages took {small_took:.2f} s "
        f"({allowed:.2f} s at its own limit), the big site's {big_took:.2f} s"
    )
