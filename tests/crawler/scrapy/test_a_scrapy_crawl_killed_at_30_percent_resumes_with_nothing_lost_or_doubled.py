"""A Scrapy process crawling through crawler.scrapy, SIGKILLed at 30 % of the site and run
again with the same command, finishes the crawl exactly.

Counted independently of crawlog's events, from the test site's own record of requests:
every reachable page fetched, a page fetched twice only if its task was leased by the
killed process (and no more of them than Scrapy's CONCURRENT_REQUESTS), every page's item
once in crawlog's export, and replay gives the live state bit for bit.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import RunningSite
from eventlog import JobKeys, read_leases
from projector import Store, read_committed
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.scrapy.conftest import CONCURRENCY, ROOT

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
KILL_AT = 0.3


async def exported_items(valkey_url: str, job: str, data_dir: Path) -> list[dict[str, Any]]:
    command = crawlog_command(
        "export", "--job", job, "--data-dir", str(data_dir), "--what", "items",
        "--format", "jsonl", "--with-meta", "-",
    )  # fmt: skip
    env = {**os.environ, "REDIS_URL": valkey_url}
    result = await anyio.run_process(command, env=env, cwd=ROOT)
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


async def test_a_killed_scrapy_process_run_again_fetches_every_page_and_writes_each_item_once(
    scrapy_site: RunningSite,
    scrapy_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    site = scrapy_site
    reachable = {url.removeprefix(site.url) for url in site.reachable}
    with anyio.fail_after(200):
        first = await scrapy_process()
        while site.request_count < int(KILL_AT * len(reachable)):
            await anyio.sleep(0.005)
        first.send_signal(signal.SIGKILL)
        await first.wait()
        await site.no_connections()
        leases, _ = await read_leases(redis_client, JobKeys(job))
        held = {info.url.removeprefix(site.url) for info in leases if info.url}
        fetched_before = site.fetch_counts()
        assert 0 < len(fetched_before) < len(reachable), "killed part-way"

        again = await scrapy_process()
        assert await again.wait() == 0
        await run_projector(valkey_url, job, data_dir)

    pages = {p: n for p, n in site.fetch_counts().items() if p != "/robots.txt"}
    assert reachable <= set(pages), f"never fetched: {sorted(reachable - set(pages))[:5]}"
    twice = sorted(p for p, n in pages.items() if n > 1)
    # No more than CONCURRENT_REQUESTS started and unfinished at once: not also the
    # responses queued in Scrapy's scraper for their callbacks (10-12 of 8 before the bound).
    assert len(twice) <= CONCURRENCY, twice
    assert set(twice) <= held, f"refetched without being held at the kill: {twice}, {held}"
    assert all(fetched_before.get(p, 0) == 1 for p in twice)

    _, state = read_committed(Store(data_dir, job))
    assert state.job.tasks.get("done") == len(reachable)
    ended = {status for status, n in state.job.tasks.items() if n}
    assert ended <= {"done", "failed"}, state.job.tasks  # failed: disallowed by robots.txt
    items = await exported_items(valkey_url, job, data_dir)
    urls = [item["data"]["url"].removeprefix(site.url) for item in items]
    assert sorted(urls) == sorted(set(urls)), "an item twice in the export"
    assert set(urls) == reachable
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
