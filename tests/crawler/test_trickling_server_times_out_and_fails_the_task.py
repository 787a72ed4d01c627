"""A server that trickles bytes (each one in time, the whole never): the fetch hits its
total timeout, the task is retried, then fails saying why; the worker never hangs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler._fetch import ERROR_TIMEOUT, FetchConfig
from crawler._job import JobConfig
from crawler._spider import SiteSpider
from crawler._worker import Worker, WorkerOptions
from eventlog import EventLog, RetryScheduled, TaskDone, TaskFailed
from tests.crawler.hostile_site import Route, serve_hostile

pytestmark = pytest.mark.anyio

HOME = b'<a href="/trickle">slow</a> <a href="/fine">fine</a>'


async def test_a_trickling_page_is_retried_then_failed_for_its_timeout(
    redis_client: aioredis.Redis,
    job: str,
    log: EventLog,
    start_job: Callable[..., Any],
    data_dir: Path,
) -> None:
    routes = {
        "/": Route(HOME),
        # 5,000 bytes 10 ms apart: never a read timeout, 50 s in all.
        "/trickle": Route(b"x" * 5000, trickle_s=0.01),
        "/fine": Route(b"<title>fine</title>"),
    }
    async with serve_hostile(routes) as site:
        config: JobConfig = await start_job([site.url + "/"], max_attempts=2)
        fetch = FetchConfig(read_timeout_s=5, total_timeout_s=1)
        worker = Worker(
            redis_client,
            job,
            "w1",
            config,
            SiteSpider(),
            data_dir=data_dir,
            options=WorkerOptions(fetch_config=fetch, exit_when_done=True),
        )
        with anyio.fail_after(60):  # two 1 s attempts and a backoff: far less
            stats = await worker.run()
        assert site.requests.count("/trickle") == 2
    events = [e.event for e in await log.read_range()]
    retried = [e for e in events if isinstance(e, RetryScheduled)]
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert [e.reason for e in retried] == [ERROR_TIMEOUT]
    assert [(e.reason, e.attempt) for e in failed] == [(ERROR_TIMEOUT, 2)]
    assert len([e for e in events if isinstance(e, TaskDone)]) == 2  # / and /fine
    assert (stats.tasks_done, stats.tasks_failed, stats.retries) == (2, 1, 1)


async def test_a_server_that_never_answers_hits_the_read_timeout(
    redis_client: aioredis.Redis,
    job: str,
    log: EventLog,
    start_job: Callable[..., Any],
    data_dir: Path,
) -> None:
    routes = {"/": Route(b'<a href="/hang">x</a>'), "/hang": Route(hang=True)}
    async with serve_hostile(routes) as site:
        config: JobConfig = await start_job([site.url + "/"], max_attempts=1)
        fetch = FetchConfig(read_timeout_s=0.5, total_timeout_s=10)
        worker = Worker(
            redis_client,
            job,
            "w1",
            config,
            SiteSpider(),
            data_dir=data_dir,
            options=WorkerOptions(fetch_config=fetch, exit_when_done=True),
        )
        with anyio.fail_after(60):
            await worker.run()
    failed = [e for e in (x.event for x in await log.read_range()) if isinstance(e, TaskFailed)]
    assert [e.reason for e in failed] == ["read timeout"]
