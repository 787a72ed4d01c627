"""A worker that stops while a step of its is in flight gives the task back; when that
step's write reached the server and only its reply was cut off, the task has already
ended. There is nothing to give back and nothing lost: the stop must not say it "could not
release" the task (a line a full disk's stop printed beside the one line it should)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from crawler._spider import SiteSpider
from crawler._worker import Worker
from eventlog import TaskDone

pytestmark = pytest.mark.anyio


async def test_releasing_a_task_whose_step_was_already_written_warns_of_nothing(
    redis_client: aioredis.Redis,
    job: str,
    tmp_path: Path,
    start_job: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = await start_job(["http://127.0.0.1:9/"], max_depth=0, obey_robots=False)
    worker = Worker(redis_client, job, "w1", config, SiteSpider(), data_dir=tmp_path)
    [lease] = await worker.queue.claim(1)
    done = TaskDone(actor="w1", task_id=lease.task.task_id, attempt=lease.task.attempt)
    await worker.queue.finish(lease, done)

    with caplog.at_level(logging.INFO, logger="crawlog.worker"):
        await worker.release_lease(lease)

    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("no longer ours to release" in r.getMessage() for r in caplog.records)
    assert await worker.queue.claim(1) == [], "an ended task is not put back"
