"""A paginated Scrapy spider (each listing page's callback follows the next page with its
number in ``cb_kwargs`` and its category in ``meta``), SIGKILLed mid-way and run again with
the same command, goes on from the page each listing had reached: every listing page
fetched, a page fetched again only if the killed process held its request, each page's
item once in crawlog's export, with the page number and category the URL says.

Counted from the test site's request log; the pages are answered late, so that requests
are in flight at the kill.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from eventlog import JobKeys, read_leases
from tests.crawler.conftest import run_projector
from tests.crawler.scrapy.test_a_scrapy_crawl_killed_at_30_percent_resumes_with_nothing_lost_or_doubled import (  # noqa: E501
    KILL_AT,
    exported_items,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
PAGED = Path(__file__).with_name("paged_spider.py")
PAGES = 1000
"""Ten categories, five listing pages each: ten chains of ``next`` links."""
SLOW = Faults(slow_rate=1.0, slow_s=0.1)
CONCURRENCY = 4


async def test_a_killed_paginated_crawl_resumes_each_listing_at_its_page(
    scrapy_process: Callable[..., Any],
    redis_client: Any,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=PAGES, seed=5, faults=SLOW) as site:
        sitemap = site.sitemap
        listings = {
            sitemap.listing_path(c, p)
            for c in range(len(sitemap.categories))
            for p in range(1, sitemap.listing_pages(c) + 1)
        }
        with anyio.fail_after(200):
            first = await scrapy_process(site=site, spider=PAGED, concurrency=CONCURRENCY)
            while site.request_count < int(KILL_AT * len(listings)):
                await anyio.sleep(0.005)
            first.send_signal(signal.SIGKILL)
            await first.wait()
            leases, _ = await read_leases(redis_client, JobKeys(job))
            held = {i.url.removeprefix(site.url) for i in leases if i.url}
            await site.no_connections()
            before = site.fetch_counts()
            assert 0 < len(set(before) & listings) < len(listings), "killed mid-way"

            again = await scrapy_process(site=site, spider=PAGED, concurrency=CONCURRENCY)
            assert await again.wait() == 0
            await run_projector(valkey_url, job, data_dir)

    counts = {p: n for p, n in site.fetch_counts().items() if p != "/robots.txt"}
    assert listings <= set(counts), f"never fetched: {sorted(listings - set(counts))}"
    twice = {p for p, n in counts.items() if n > 1}
    assert twice <= held, f"fetched again though not held at the kill: {twice - held}"
    assert all(before.get(p, 0) == 1 for p in twice)
    items = [i["data"] for i in await exported_items(valkey_url, job, data_dir)]
    urls = [data["url"].removeprefix(site.url) for data in items]
    assert sorted(urls) == sorted(set(urls)), "an item twice in the export"
    assert set(urls) == listings
    for data in items:
        assert (data["page"], data["category"]) == (data["url_page"], data["url_category"])
