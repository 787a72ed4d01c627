"""A ``Follow`` names the callback that parses its page and the data that callback gets
as ``response.data``; a form is POSTed URL-encoded with its Content-Type and the
follow's own headers; all of it travels in the task's ``TaskEnqueued`` event.

The witness is the test site: its request log (method and path) and its echo page, which
answers with the method, headers and body it was sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, TaskDone, TaskEnqueued
from tests.crawler.request_spiders import SEARCH_PATH

pytestmark = pytest.mark.anyio


async def test_items_carry_their_callback_s_data_and_the_form_is_posted_with_its_headers(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=40, seed=3) as site:
        sitemap = site.sitemap
        category = sitemap.categories[0]
        listings = [sitemap.listing_path(0, p) for p in range(1, sitemap.listing_pages(0) + 1)]
        items = [f"/item/{n}" for n in sitemap.category_items(0)]
        await start_job(
            [site.url + listings[0]],
            spider="tests.crawler.request_spiders:CategorySpider",
            scope="host",
            max_depth=1,
        )
        with anyio.fail_after(90):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
        requests = [(r.method, r.path) for r in site.requests]

    assert sorted(requests) == sorted(
        [("GET", p) for p in (*listings, *items, "/robots.txt")] + [("POST", SEARCH_PATH)]
    )
    events = [e.event for e in await log.read_range()]
    scraped = {e.key: e.data for e in events if isinstance(e, ItemScraped)}
    # Each item page was parsed by parse_item, with the data of the listing page it was on.
    for n in sitemap.category_items(0):
        data = scraped[f"{site.url}/item/{n}"]
        assert data["callback"] == "parse_item"
        assert data["category"] == category
        assert isinstance(data["listing_page"], int) and data["listing_page"] >= 1
        assert data["title"]
    assert {d["listing_page"] for d in scraped.values() if "listing_page" in d} == set(
        range(1, len(listings) + 1)
    )
    search = scraped[f"search {category}"]
    assert search == {
        "callback": "parse_search",
        "data": {"category": category},
        "method": "POST",
        "body": f"q={category}&page=1",
        "form": {"q": category, "page": "1"},
        "header": category,
        "content_type": "application/x-www-form-urlencoded",
    }
    # What a worker needs to redo the search is in its TaskEnqueued event; a plain GET's
    # event has no spec.
    enqueued = {e.url: e for e in events if isinstance(e, TaskEnqueued)}
    spec = enqueued[site.url + SEARCH_PATH].spec
    assert spec is not None
    assert (spec.method, spec.body, spec.callback) == (
        "POST",
        f"q={category}&page=1".encode(),
        "parse_search",
    )
    assert spec.data == {"category": category}
    assert spec.headers == {
        "X-Crawl-Test": category,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    assert enqueued[site.url + listings[0]].spec is None
    item_spec = enqueued[site.url + items[0]].spec
    assert item_spec is not None and item_spec.method == "GET" and item_spec.body is None
    assert len([e for e in events if isinstance(e, TaskDone)]) == len(enqueued)
