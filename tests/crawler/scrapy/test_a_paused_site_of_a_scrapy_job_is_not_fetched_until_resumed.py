"""``crawlog pause --site`` stops a Scrapy job's fetches of that site: once the Scrapy
process has seen the pause (it parks a task), it hands Scrapy no request of the site, not
even those it had claimed ahead; what Scrapy was downloading finishes, and the process
holds no lease. ``crawlog resume --site`` brings the parked tasks back, and the same
process finishes the crawl: every page fetched once.

Whether a request was handed out after the pause was seen is read from the log: a task's
``TaskClaimed`` is minted when Scrapy gets its request, ``TaskParked`` when a task is held
back, both time-ordered event ids of the one process.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis

from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, JobKeys, TaskClaimed, TaskDone, TaskParked, read_leases
from tests.crawler.operator_cli import crawlog
from tests.crawler.scrapy.conftest import SCRAPY_PAGES

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
SLOW_S = 0.2
"""Every page answered this late: Scrapy has requests in flight and claimed ahead, and the
crawl is far from its end when the pause is seen."""
CONCURRENCY = 2
PAUSE_AFTER = 4


async def test_a_paused_site_is_parked_not_fetched_and_resumed_to_the_end(
    scrapy_process: Callable[..., Any],
    redis_client: aioredis.Redis,
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(
        pages=SCRAPY_PAGES, seed=3, faults=Faults(slow_rate=1.0, slow_s=SLOW_S)
    ) as site:
        reachable = {url.removeprefix(site.url) for url in site.reachable}
        host = site.url.removeprefix("http://")
        with anyio.fail_after(200):
            process = await scrapy_process(site=site, concurrency=CONCURRENCY)
            while site.request_count < PAUSE_AFTER:
                await anyio.sleep(0.005)
            paused = await crawlog(
                valkey_url, data_dir, "pause", "--job", job, "--site", host, "--reason", "test"
            )
            assert paused.returncode == 0, paused.stderr
            # Parked, and nothing leased: what Scrapy was downloading is done.
            while True:
                events = [e.event for e in await log.read_range()]
                leases, _ = await read_leases(redis_client, JobKeys(job))
                if not leases and any(isinstance(e, TaskParked) for e in events):
                    break
                await anyio.sleep(0.02)
            fetched_while_paused = site.request_count
            parked = [e for e in events if isinstance(e, TaskParked)]
            first_parked = min(e.event_id for e in parked)
            late = [e for e in events if isinstance(e, TaskClaimed) and e.event_id > first_parked]
            assert not late, f"{len(late)} request(s) handed to Scrapy after the pause was seen"
            assert process.returncode is None, "the process waits for the paused site"

            resumed = await crawlog(
                valkey_url, data_dir, "resume", "--job", job, "--site", host, "--reason", "test"
            )
            assert resumed.returncode == 0, resumed.stderr
            assert await process.wait() == 0
    assert fetched_while_paused < len(reachable)
    pages = site.fetch_counts()
    assert set(pages) - {"/robots.txt"} == reachable
    assert all(n == 1 for n in pages.values()), {p: n for p, n in pages.items() if n > 1}
    done = {e.task_id for e in (x.event for x in await log.read_range()) if isinstance(e, TaskDone)}
    assert {e.task_id for e in parked} <= done, "a parked task was not done after the resume"
