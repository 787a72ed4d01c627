"""A spider written the Scrapy way (``response.css``, ``response.follow`` of a selector,
``follow_all(css=..., callback="parse_item")``, a ``deny`` attribute) crawls the test site
through the real ``crawlog crawl``: every listing page and every item its rule allows is
requested once (items parsed by the callback), no denied one at all, and what the rule
left out is counted as "denied by rule"."""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest

from crawler.cli._argv import crawlog_command
from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, PageFetched
from tests.crawler.conftest import ROOT

pytestmark = pytest.mark.anyio


async def test_css_follow_and_follow_all_crawl_the_listing_and_its_allowed_items(
    valkey_url: str, data_dir: Path, job: str, log: EventLog
) -> None:
    env = {**os.environ, "REDIS_URL": valkey_url}
    async with serve_testsite(pages=120, seed=4) as site:
        sitemap = site.sitemap
        listings = [sitemap.listing_path(0, p) for p in range(1, sitemap.listing_pages(0) + 1)]
        items = [f"/item/{n}" for n in sitemap.category_items(0)]
        command = crawlog_command(
            "crawl", site.url + listings[0], "--job", job, "--scope", "host",
            "--spider", "tests.crawler.spiders:SelectorSpider",
            "--workers", "1", "--concurrency", "4", "--data-dir", str(data_dir),
        )  # fmt: skip
        with anyio.fail_after(90):
            result = await anyio.run_process(command, env=env, cwd=ROOT, check=False)
        counts = site.fetch_counts()
    assert result.returncode == 0, result.stderr.decode()
    denied = [path for path in items if path.endswith("5")]
    assert denied and len(denied) < len(items)
    allowed = [path for path in items if path not in denied]
    assert counts == {"/robots.txt": 1, **dict.fromkeys([*listings, *allowed], 1)}
    events = [entry.event for entry in await log.read_range()]
    titles = {e.key: e.data["title"] for e in events if isinstance(e, ItemScraped)}
    assert set(titles) == {site.url + path for path in allowed}
    item = allowed[0]
    number = int(item.rsplit("/", 1)[1])
    assert re.fullmatch(rf"Item {number}: \w+ \w+", titles[site.url + item])
    dropped = sum(e.dropped.get("denied by rule", 0) for e in events if isinstance(e, PageFetched))
    assert dropped == len(denied)
