"""A worker works through the queue it is given (one with an observer, as its metrics
are counted through), never one of its own, and its queue cannot be swapped after."""

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
from eventlog import TaskQueue
from tests.eventlog.helpers import RecordingObserver

pytestmark = pytest.mark.anyio


async def test_a_worker_given_an_observed_queue_reports_every_task_it_ends_through_it(
    redis_client: aioredis.Redis, job: str, tmp_path: Path, start_job: Callable[..., Any]
) -> None:
    async with serve_testsite(pages=20, seed=3) as site:
        config = await start_job([site.url + "/"], obey_robots=False)
        seen = RecordingObserver()
        queue = worker_queue(redis_client, job, "w1", config, observer=seen)
        worker = Worker(
            redis_client,
            job,
            "w1",
            config,
            SiteSpider(),
            data_dir=tmp_path,
            options=WorkerOptions(exit_when_done=True),
            queue=queue,
        )
        with anyio.fail_after(60):
            stats = await worker.run()
    assert worker.queue is queue
    steps = [what for hook, what in seen.calls if hook == "settled" and isinstance(what, tuple)]
    assert stats.tasks_done > 1
    assert [mode for mode, _ in steps].count("finish") == stats.tasks_done + stats.tasks_failed
    new = [what for hook, what in seen.calls if hook == "enqueued" and isinstance(what, list)]
    assert sum(map(sum, new)) == stats.enqueued
    with pytest.raises(AttributeError):
        worker.queue = TaskQueue(redis_client, job, "w1")  # type: ignore[misc]


async def test_a_queue_of_another_worker_is_refused(
    redis_client: aioredis.Redis, job: str, tmp_path: Path, start_job: Callable[..., Any]
) -> None:
    config = await start_job(["http://127.0.0.1:1/"])
    other = worker_queue(redis_client, job, "w2", config)
    with pytest.raises(ValueError, match="w2"):
        Worker(redis_client, job, "w1", config, SiteSpider(), data_dir=tmp_path, queue=other)
