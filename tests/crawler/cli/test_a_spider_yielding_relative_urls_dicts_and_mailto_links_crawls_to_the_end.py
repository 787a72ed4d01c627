"""Relative URLs are resolved against the page, dicts become items, and what cannot be
crawled (``mailto:``, off the site, too deep) is dropped and counted by reason: the crawl
of a spider written with Scrapy habits runs to the end, every page done."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, PageFetched, TaskDone, TaskEnqueued
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.operator_cli import crawlog

pytestmark = pytest.mark.anyio


async def test_relative_follows_next_pages_and_dicts_are_crawled_and_every_drop_counted(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    async with serve_testsite(pages=40, seed=3) as site:
        sitemap = site.sitemap
        listings = [sitemap.listing_path(0, p) for p in range(1, sitemap.listing_pages(0) + 1)]
        items = [f"/item/{n}" for n in sitemap.category_items(0)]
        await start_job(
            [site.url + listings[0]],
            spider="tests.crawler.spiders:ScrapyHabitSpider",
            scope="host",
            max_depth=1,
        )
        with anyio.fail_after(90):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
            await run_projector(valkey_url, job, data_dir)
            report = await crawlog(valkey_url, data_dir, "report", "--job", job)
            history = await crawlog(
                valkey_url, data_dir, "history", "--job", job, site.url + items[0]
            )
            await replay_verify(valkey_url, job, data_dir)
        requested = {request.path for request in site.requests}

    # The witness: every listing page (NextPage "?page=2") and every item ("/item/3",
    # "../item/3") was requested by its resolved URL, and nothing else but robots.txt.
    assert requested == {*listings, *items, "/robots.txt"}
    events = [e.event for e in await log.read_range()]
    enqueued = {e.task_id for e in events if isinstance(e, TaskEnqueued)}
    done = {e.task_id for e in events if isinstance(e, TaskDone)}
    assert len(enqueued) == 1 + len(items) and done == enqueued
    # A dict per listing row (keyed by its page and position) and per item page (its url).
    keys = {e.key for e in events if isinstance(e, ItemScraped)}
    assert len(keys) == 2 * len(items)
    assert {site.url + path for path in items} <= keys
    assert any(key.startswith(site.url + listings[0] + "#") for key in keys)
    dropped: dict[str, int] = {}
    for event in events:
        if isinstance(event, PageFetched):
            for reason, count in event.dropped.items():
                dropped[reason] = dropped.get(reason, 0) + count
    # mailto: and javascript: on every listing page; "/" (depth 2) and another host on
    # every item page.
    expected = {
        "not http(s)": 2 * len(listings),
        "out of scope": len(items),
        "too deep": len(items),
    }
    assert dropped == expected
    assert report.returncode == 0, report.stderr
    total = sum(expected.values())
    assert (
        f"URLs dropped: {total}, not http(s) {2 * len(listings)}, out of scope {len(items)}, "
        f"too deep {len(items)}"
    ) in report.stdout
    assert history.returncode == 0, history.stderr
    assert "URLs dropped, 1 out of scope, 1 too deep" in history.stdout
