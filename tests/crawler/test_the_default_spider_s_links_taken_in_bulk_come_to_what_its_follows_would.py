"""A worker whose spider keeps the default spider's ``parse`` takes a page's item and links
in bulk (`SiteSpider.page_outputs`), without a `Follow` per link: what its scraper makes of
them is what the same links yielded one `Follow` at a time come to (the same new tasks in
the same order, the same item, the same drops by reason), with and without link rules, on
a page whose links another page already gave."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from crawler._fetch_spec import FetchResult
from crawler._job import JobConfig
from crawler._spider import Item, Output, Response, SiteSpider
from crawler._urls import fingerprint, site_of
from crawler._worker import Worker
from eventlog import FIRST_RUN, Lease, Task

pytestmark = pytest.mark.anyio

SEED = "http://shop.test/docs/"
PAGE = SEED + "guide/page-1.html"
HREFS = [
    "page-2.html",  # in scope, relative to the page's directory
    "../index.html",
    "/docs/api.html?b=2&a=1#top",
    "page-2.html#again",  # the same task as the first
    "http://shop.test/docs/guide/page-3.html",
    "//shop.test/docs/x.html",
    "/elsewhere/out.html",  # out of the seed's prefix
    "http://other.test/docs/",  # another host
    "mailto:someone@shop.test",  # not http(s)
    "javascript:void(0)",
    "http://exa mple.com/",  # malformed
    "",  # the page itself
    "?q=1",
    "item/7.pdf",
]


class OneFollowAtATime(SiteSpider):
    """The default spider, its outputs passed on one by one (so the worker's generic path)."""

    async def parse(self, response: Response) -> AsyncIterator[Output]:
        async for output in super().parse(response):
            yield output


def page(hrefs: list[str]) -> bytes:
    links = "".join(f'<a href="{href}">link</a>' for href in hrefs)
    return f"<html><head><title>A page</title></head><body>{links}</body></html>".encode()


def worker(
    redis_client: aioredis.Redis, job: str, tmp_path: Path, spider: SiteSpider, **rules: str
) -> Worker:
    """A worker of its own job (so its own seen set), with the job's link rules."""
    config = JobConfig(
        seeds=(SEED,),
        allow=(rules["allow"],) if "allow" in rules else (),
        deny=(rules["deny"],) if "deny" in rules else (),
    )
    return Worker(redis_client, job, "w1", config, spider, data_dir=tmp_path / job)


async def parsed_pages(
    work: Worker, pages: list[tuple[str, list[str]]], run: int = FIRST_RUN
) -> list[tuple[list[tuple[str, Task]], list[Item], dict[str, int]]]:
    """What each page comes to, the fresh tasks of each enqueued before the next is parsed;
    the pages' tasks are of ``run``."""
    found = []
    for url, hrefs in pages:
        task = Task(task_id=fingerprint(url), url=url, site=site_of(url), depth=1, run=run)
        lease = Lease(lane=0, entry_id="1-0", task=task)
        result = FetchResult(
            url=url,
            final_url=url,
            status=200,
            headers={"content-type": "text/html; charset=utf-8"},
            body=page(hrefs),
            parseable=True,
        )
        parsed = await work.scraper.parse(lease, result, 1, None)
        found.append((list(parsed.fresh.items()), list(parsed.items), dict(parsed.dropped)))
        await work.scraper.enqueue(parsed.fresh)
    return found


class OwnBulkLinks(SiteSpider):
    """A spider whose bulk links are its own: written as a page has them, not canonical."""

    def page_outputs(self, response: Response) -> tuple[Item, list[str]]:
        item, _ = super().page_outputs(response)
        return item, ["page-2.html", "HTTP://Shop.test/docs/guide/page-3.html#x", "mailto:a@b.c"]


class OwnLinksOneAtATime(OwnBulkLinks):
    async def parse(self, response: Response) -> AsyncIterator[Output]:
        async for output in super().parse(response):
            yield output


@pytest.mark.parametrize("run", [FIRST_RUN, FIRST_RUN + 2])
@pytest.mark.parametrize("rules", [{}, {"deny": r"\.pdf$"}, {"allow": "/guide/"}])
async def test_bulk_links_come_to_what_one_follow_at_a_time_does(
    redis_client: aioredis.Redis, job: str, tmp_path: Path, rules: dict[str, str], run: int
) -> None:
    pages = [
        (PAGE, HREFS),
        # Another page of the directory: its links the first gave are not new.
        (SEED + "guide/page-2.html", [*reversed(HREFS), "page-9.html"]),
    ]
    bulk = worker(redis_client, f"{job}-bulk", tmp_path, SiteSpider(), **rules)
    each = worker(redis_client, f"{job}-each", tmp_path, OneFollowAtATime(), **rules)
    assert bulk.scraper.bulk_links and not each.scraper.bulk_links
    got, expected = await parsed_pages(bulk, pages, run), await parsed_pages(each, pages, run)
    assert got == expected
    assert all(task.run == run for fresh, _, _ in got for _, task in fresh)
    first_fresh, _, first_dropped = got[0]
    assert first_fresh, "the page has new links"
    assert first_dropped.get("out of scope" if "allow" not in rules else "denied by rule")
    second_fresh, _, _ = got[1]
    # Only what resolves against that page itself, and the link the first did not have.
    assert [task.url for _, task in second_fresh] == [
        SEED + "guide/page-2.html?q=1",
        SEED + "guide/page-9.html",
    ]


async def test_a_spider_s_own_bulk_links_are_resolved_as_its_follows_would_be(
    redis_client: aioredis.Redis, job: str, tmp_path: Path
) -> None:
    """A spider that changes ``page_outputs`` may give any text: its links are resolved
    against the page, not taken for the parser's canonical URLs."""
    bulk = worker(redis_client, f"{job}-bulk", tmp_path, OwnBulkLinks())
    each = worker(redis_client, f"{job}-each", tmp_path, OwnLinksOneAtATime())
    pages = [(PAGE, HREFS)]
    got, expected = await parsed_pages(bulk, pages), await parsed_pages(each, pages)
    assert got == expected
    fresh, _, dropped = got[0]
    assert [task.url for _, task in fresh] == [
        SEED + "guide/page-2.html",
        SEED + "guide/page-3.html",
    ]
    assert dropped == {"not http(s)": 1}
