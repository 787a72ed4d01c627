"""A store lost and rebuilt by ``crawlog restore`` (a real FLUSHALL of a real Valkey) counts
against ``--max-pages`` the next pages its tasks took, not only their first pages: a job
that had reached its bound still refuses a new page after the restore. Before, the count
came back as the tasks alone and the bound erred high by every next page. ``crawlog
enqueue`` says a URL the bound refused is refused, not "already known"."""

from __future__ import annotations

from pathlib import Path

import pytest

from crawler.testsite import serve_testsite
from tests.crawler.cli_run import clean_env, crawlog_done
from tests.valkey_process import running_valkey

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(150)]
LISTING_SPIDER = "tests.crawler.spiders:ListingSpider"


async def test_a_restored_job_at_its_bound_still_refuses_a_new_page(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with running_valkey(tmp_path / "valkey") as server:
        env = clean_env(REDIS_URL=server.url)

        async def crawlog(*args: str) -> str:
            return await crawlog_done(*args, "--job", "j", "--data-dir", str(data_dir), env=env)

        async with serve_testsite(pages=200, seed=3) as site:
            sitemap = site.sitemap
            listing = [sitemap.listing_path(0, p) for p in range(1, sitemap.listing_pages(0) + 1)]
            assert len(listing) >= 3
            bound = len(listing)  # the listing's task and its next pages: the whole bound
            crawl = (
                "crawl", site.url + listing[0], "--spider", LISTING_SPIDER, "--depth", "0",
                "--ignore-robots", "--max-pages", str(bound),
            )  # fmt: skip
            await crawlog(*crawl)
            assert sorted(r.path for r in site.requests) == sorted(listing)
            server.flushall()
            await crawlog("restore", "--yes")
            await crawlog(*crawl)  # its settings, lost with the store, given again
            said = await crawlog("enqueue", site.url + "/item/1")
            fetched = sorted(r.path for r in site.requests)

    assert fetched == sorted(listing), "the finished job fetched nothing more"
    assert said.strip() == "0 new task(s), 0 already known, 1 past --max-pages, not enqueued"
