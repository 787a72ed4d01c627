"""A spider's exception fails that task with the error; the worker goes on with the rest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskDone, TaskFailed

pytestmark = pytest.mark.anyio


async def test_a_spider_that_raises_fails_its_task_and_the_worker_goes_on(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=60, seed=5) as site:
        items = sorted(p for p in site.sitemap.reachable if "/item/" in p)[:3]
        others = sorted(p for p in site.sitemap.reachable if "/item/" not in p)[:3]
        seeds = [site.url + p for p in items + others]
        await start_job(seeds, spider="tests.crawler.spiders:FlakySpider", max_depth=0)
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
    events = [e.event for e in await log.read_range()]
    failed = {e.task_id: e.reason for e in events if isinstance(e, TaskFailed)}
    done = [e for e in events if isinstance(e, TaskDone)]
    assert len(failed) == len(items) and len(done) == len(others)
    assert all(r.startswith("spider error: ValueError: cannot parse") for r in failed.values())
