"""``NextPage(url, data=...)``: the next page's callback gets that data as
``response.data``, kept in the page's checkpoint, so that a worker SIGKILLed on the next
page and restarted gives it the same data when it resumes there."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped
from tests.crawler.request_spiders import KILL_IN_ENV

pytestmark = pytest.mark.anyio
LONG_LEASE_MS = 120_000
"""Longer than the test: the restart resumes its own task, from its checkpoint."""
KILLED_AT = 2


async def test_the_resumed_page_gets_the_data_its_next_page_carried(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "killed"
    async with serve_testsite(pages=200, seed=3) as site:
        sitemap = site.sitemap
        pages = sitemap.listing_pages(0)
        assert pages > KILLED_AT
        listings = [sitemap.listing_path(0, p) for p in range(1, pages + 1)]
        await start_job(
            [site.url + listings[0]],
            spider="tests.crawler.request_spiders:PagedSpider",
            max_depth=0,
            lease_ms=LONG_LEASE_MS,
        )
        env = {KILL_IN_ENV: f"parse page {KILLED_AT}:{marker}"}
        with anyio.fail_after(90):
            first = await worker_process("w1", env=env)
            assert await first.wait() == -signal.SIGKILL
            again = await worker_process("w1", "--exit-when-done", env=env)
            assert await again.wait() == 0
        counts = site.fetch_counts()

    # Page 2 was fetched again (the kill came before its checkpoint), page 1 was not.
    assert counts[listings[0]] == 1 and counts[listings[KILLED_AT - 1]] == 2
    items = {
        e.event.key: e.event.data
        for e in await log.read_range()
        if isinstance(e.event, ItemScraped)
    }
    assert items == {
        f"page {n}": {"data": {"from_page": n - 1} if n > 1 else {}} for n in range(1, pages + 1)
    }
