"""``crawlog recrawl`` of a job a Scrapy spider crawled through the plug-in is refused in
one line (exit 2) before a run is started or a task enqueued: crawlog's workers cannot run
a Scrapy spider. Before, the recrawl enqueued every page as run 2, its workers failed
("scrapy has no spider class ..."), and the job was left with a run started and every
one of its tasks pending."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from eventlog import FINISHED, JobKeys, RunRecord, TaskQueue, read_run
from tests.crawler.scrapy.conftest import ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]


async def test_the_recrawl_says_why_and_starts_nothing(
    scrapy_site: RunningSite,
    scrapy_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
    redis_client: aioredis.Redis,
) -> None:
    with anyio.fail_after(150):
        process = await scrapy_process()
        assert await process.wait() == 0
        requests = len(scrapy_site.requests)
        events = await redis_client.xlen(JobKeys(job).events)
        command = crawlog_command("recrawl", "--job", job, "--data-dir", str(data_dir))
        env = {**os.environ, "REDIS_URL": valkey_url}
        done = await anyio.run_process(command, env=env, cwd=ROOT, check=False)

    said = done.stderr.decode()
    assert done.returncode == 2, (done.stdout, said)
    assert said.startswith(f"crawlog: error: job '{job}' is crawled by Scrapy"), said
    assert len(said.strip().splitlines()) == 1, said
    assert len(scrapy_site.requests) == requests
    assert await redis_client.xlen(JobKeys(job).events) == events, "nothing enqueued"
    assert await read_run(redis_client, JobKeys(job)) == RunRecord(run=1, state=FINISHED)
    left, _ = await TaskQueue(redis_client, job, "t").left()
    assert left == 0
