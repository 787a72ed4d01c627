"""A page linked directly and through redirects is fetched once: a redirect whose target
another task has is not followed (the target's task fetches it), and a redirect target
nobody had yet is claimed, so no task is ever enqueued for it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._job import JobConfig
from crawler._spider import SiteSpider
from crawler._urls import fingerprint, site_of
from crawler._worker import Worker
from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, Task, TaskDone, TaskQueue

pytestmark = pytest.mark.anyio


async def test_a_page_reached_by_a_redirect_is_fetched_once(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=200, seed=4, faults=Faults(redirects=True)) as site:
        await start_job([site.url + "/"], obey_robots=False)
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
        site.flush_log()
        fetched = site.fetch_counts()
        redirected_to = {"/item/" + p.rsplit("/", 1)[1] for p in site.sitemap.redirects}
    assert redirected_to & set(fetched), "the site has redirects the crawl followed"
    twice = {path: n for path, n in fetched.items() if n > 1}
    assert twice == {}
    done = [e.event for e in await log.read_range() if isinstance(e.event, TaskDone)]
    handed = [e for e in done if e.reason.endswith("fetched by its own task")]
    assert handed, "some redirects led to pages their own tasks fetched"


async def test_a_redirect_to_another_spelling_of_the_tasks_own_url_is_followed(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    url = "http://127.0.0.1:1/item/1"
    other = "http://127.0.0.1:1/item/2"
    config = JobConfig(seeds=("http://127.0.0.1:1/",))
    worker = Worker(redis_client, job, "w1", config, SiteSpider(), data_dir=tmp_path)
    queue = TaskQueue(redis_client, job, "seed")
    tasks = [Task(task_id=fingerprint(u), url=u, site=site_of(u)) for u in (url, other)]
    await queue.enqueue(tasks, actor="seed")
    claim = worker.downloader.claimer(fingerprint(url))
    # Its own page in another spelling (a fragment): followed, though its URL is "seen".
    assert await claim(url + "#top")
    assert not await claim(other), "another task's page is that task's to fetch"
