"""A worker SIGKILLed inside a callback: the task, redone by another worker once the lease
expired, is the same request (a POSTed form, its body and headers) parsed by the same
callback with the same data. Nothing of it lived only in the dead worker's memory.

Witnesses: the test site's request log (method and path of each request) and its echo
page (what the redo sent); the items in the log (what the callbacks got)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, ItemScraped, TaskDone, TaskEnqueued, TaskReclaimed
from tests.crawler.request_spiders import KILL_IN_ENV, SEARCH_PATH

pytestmark = pytest.mark.anyio
SHORT_LEASE_MS = 2_000
"""Short, so that the second worker (another name) takes the dead one's tasks soon."""
DEADLINE_S = 90


@pytest.mark.parametrize("callback", ["parse_search", "parse_item"])
async def test_the_redone_task_calls_the_same_callback_with_the_same_data_and_request(
    callback: str,
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    log: EventLog,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "killed"
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
            lease_ms=SHORT_LEASE_MS,
        )
        with anyio.fail_after(DEADLINE_S):
            first = await worker_process("w1", env={KILL_IN_ENV: f"{callback}:{marker}"})
            await first.wait()  # it kills itself in the callback
            assert marker.exists()
            second = await worker_process("w2", "--exit-when-done")
            assert await second.wait() == 0
        requests = [(r.method, r.path) for r in site.requests]

    events = [e.event for e in await log.read_range()]
    reclaimed = {e.task_id for e in events if isinstance(e, TaskReclaimed)}
    assert reclaimed, "the dead worker's tasks were taken over"
    enqueued = {e.task_id: e for e in events if isinstance(e, TaskEnqueued)}
    done = {e.task_id for e in events if isinstance(e, TaskDone)}
    assert done == set(enqueued)
    # Whatever was fetched twice was fetched the same way both times: the search POSTed.
    assert {path for method, path in requests if method != "GET"} == {SEARCH_PATH}
    posts = [r for r in requests if r == ("POST", SEARCH_PATH)]
    assert (len(posts) == 2) == (callback == "parse_search")
    assert {p for _, p in requests} == {*listings, *items, SEARCH_PATH, "/robots.txt"}

    scraped: dict[str, tuple[str, dict[str, Any]]] = {}
    for event in events:
        if isinstance(event, ItemScraped):
            scraped.setdefault(event.key, (event.actor, event.data))
    # The task the kill cut short was redone by w2, through the same callback and data.
    redone = [key for key, (actor, data) in scraped.items() if data["callback"] == callback]
    assert any(scraped[key][0] == "w2" for key in redone)
    search_by, search = scraped[f"search {category}"]
    assert search["method"] == "POST" and search["body"] == f"q={category}&page=1"
    assert search["form"] == {"q": category, "page": "1"}
    assert search["header"] == category and search["data"] == {"category": category}
    if callback == "parse_search":
        assert search_by == "w2"
    for path in items:
        _, data = scraped[site.url + path]
        assert data["callback"] == "parse_item" and data["category"] == category
