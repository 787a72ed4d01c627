"""What a spider yields is checked where it is yielded: an item keyed by a dict, data
msgpack cannot encode, or something that is no output fails that task with a reason
naming the spider, the page and what was wrong; the worker crawls the other tasks, and
nothing reaches the log that the projector cannot read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.testsite import serve_testsite
from eventlog import EventLog, JobKeys, TaskDone, TaskFailed
from tests.crawler.conftest import run_projector

pytestmark = pytest.mark.anyio


async def test_unloggable_outputs_fail_their_tasks_and_the_worker_goes_on(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    redis_client: aioredis.Redis,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=30, seed=2) as site:
        bad = [f"{site.url}/item/{n}" for n in (3, 4, 5)]  # one of each kind (n % 3)
        good = [site.url + "/", site.url + site.sitemap.listing_path(0, 1)]
        await start_job(bad + good, spider="tests.crawler.spiders:BadOutputSpider", max_depth=0)
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done", "--concurrency", "1")
            assert await worker.wait() == 0
            await run_projector(valkey_url, job, data_dir)
    events = [e.event for e in await log.read_range()]
    failed = {e.task_id: e.reason for e in events if isinstance(e, TaskFailed)}
    done = [e for e in events if isinstance(e, TaskDone)]
    assert len(failed) == len(bad) and len(done) == len(good)
    reasons = sorted(failed.values())
    for reason in reasons:
        assert reason.startswith("spider output: spider bad-output on http://127.0.0.1:")
    by_url = {url: next(r for r in reasons if f" on {url}:" in r) for url in bad}
    assert "its key is a dict, expected a str" in by_url[bad[0]]
    assert "Encoding objects of type object is unsupported" in by_url[bad[1]]
    assert "'a string, not an output' (str): expected an Item" in by_url[bad[2]]
    # Every event decoded: the projector dead-lettered nothing.
    assert await redis_client.xlen(JobKeys(job).dead) == 0
