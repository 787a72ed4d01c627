"""``crawlog retry`` of a Scrapy request that failed (a listing page answering 500 until
Scrapy's retries ran out) puts the task back with the Scrapy request it carried: the
Scrapy process run again fetches it with its own callback, cb_kwargs and meta, not the
spider's default callback, and so goes on down the listing it broke.

The projector's state keeps the request (``TaskState.request`` from ``TaskEnqueued``): the
operator retry rebuilds the task from that state.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from projector import Store, read_committed
from tests.crawler.conftest import run_projector
from tests.crawler.operator_cli import crawlog
from tests.crawler.scrapy.test_a_scrapy_crawl_killed_at_30_percent_resumes_with_nothing_lost_or_doubled import (  # noqa: E501
    exported_items,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(240)]
PAGED = Path(__file__).with_name("paged_spider.py")
SCRAPY_TRIES = 3
"""Scrapy's first attempt and its RETRY_TIMES (2) retries: all answered 500."""
FAULTS = Faults(error_500_rate=0.04, error_500_times=SCRAPY_TRIES)
SEED = 11
PAGES = 600
BROKEN = "/list/howto?page=3"
"""The one listing page this seed's faults break (checked below)."""
AFTER = ("/list/howto?page=4", "/list/howto?page=5")


async def test_a_retried_scrapy_request_is_fetched_with_its_callback_cb_kwargs_and_meta(
    scrapy_process: Callable[..., Any], job: str, valkey_url: str, data_dir: Path
) -> None:
    async with serve_testsite(pages=PAGES, seed=SEED, faults=FAULTS) as site:
        sitemap = site.sitemap
        listings = [
            sitemap.listing_path(c, p)
            for c in range(len(sitemap.categories))
            for p in range(1, sitemap.listing_pages(c) + 1)
        ]
        assert [p for p in listings if sitemap.fault_plan(p).failures] == [BROKEN]
        with anyio.fail_after(200):
            first = await scrapy_process(site=site, spider=PAGED)
            assert await first.wait() == 0
            await run_projector(valkey_url, job, data_dir)
            _, state = read_committed(Store(data_dir, job))
            broken = next(t for t in state.tasks.values() if t.url == site.url + BROKEN)
            assert (broken.status, broken.last_reason) == ("failed", "HTTP 500")
            assert site.fetch_counts()[BROKEN] == SCRAPY_TRIES
            assert not set(AFTER) & set(site.fetch_counts()), "the listing broke there"

            retried = await crawlog(
                valkey_url, data_dir, "retry", "--job", job, broken.task_id, "--reason", "test"
            )
            assert retried.returncode == 0, retried.stderr
            again = await scrapy_process(site=site, spider=PAGED)
            assert await again.wait() == 0
            await run_projector(valkey_url, job, data_dir)

    counts = site.fetch_counts()
    assert counts[BROKEN] == SCRAPY_TRIES + 1
    assert set(listings) <= set(counts), sorted(set(listings) - set(counts))
    items = {
        i["data"]["url"].removeprefix(site.url): i["data"]
        for i in await exported_items(valkey_url, job, data_dir)
    }
    assert set(items) == set(listings)
    page = items[BROKEN]
    assert (page["page"], page["category"]) == (3, "howto"), "its cb_kwargs and meta"
    for data in items.values():
        assert (data["page"], data["category"]) == (data["url_page"], data["url_category"])
