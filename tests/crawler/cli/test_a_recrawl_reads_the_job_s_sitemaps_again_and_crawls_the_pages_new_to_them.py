"""A recrawl of a job seeded by sitemaps reads them again: a page listed there since the
last run, and linked from no page, is crawled as new to the run (and listed so by
``crawlog changes``); the pages it listed before are revisited once, not enqueued again.
Before, a recrawl read no sitemap: a site whose new pages are found through its sitemap
never had one found by a recrawl."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import Route, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio


def sitemap(origin: str, paths: list[str]) -> Route:
    urls = "".join(f"<url><loc>{origin}{path}</loc></url>\n" for path in paths)
    xml = (
        '<?xml version="1.0"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n'
    )
    return Route(xml.encode(), content_type="application/xml")


def page(n: int) -> Route:
    return Route(f"<!DOCTYPE html>\n<title>page {n}</title>\n<p>page {n}</p>\n".encode())


async def test_a_page_new_to_the_sitemap_is_crawled_and_listed_new(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {"/": page(0), "/p/1": page(1), "/p/2": page(2)}
    async with serve_hostile(routes) as site:
        site.routes["/sitemap.xml"] = sitemap(site.url, ["/p/1", "/p/2"])
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", "--sitemap", site.url + "/sitemap.xml", *where)
        assert {"/p/1", "/p/2"} <= set(site.requests)
        site.routes["/p/3"] = page(3)
        site.routes["/sitemap.xml"] = sitemap(site.url, ["/p/1", "/p/2", "/p/3"])
        before = len(site.requests)
        said = await run("recrawl", *where)
        again = site.requests[before:]
        listed = await run("changes", "--job", job, "--all", "--format", "jsonl")

    assert "sitemaps: 1 read, 3 URL(s) in scope (1 new)" in said, said
    # The run's own tasks, counted as its own: 3 revisits and the new page.
    assert f"job {job} run 2: 4 task(s) enqueued" in said, said
    assert f"progress {job} run 2: 4/4 tasks ended (100.0%)" in said, said
    pages = sorted(path for path in again if path.startswith("/p/"))
    assert pages == ["/p/1", "/p/2", "/p/3"], again
    changes = {
        row["url"].removeprefix(site.url): row["change"]
        for row in map(json.loads, listed.splitlines())
    }
    assert changes == {"/": "unchanged", "/p/1": "unchanged", "/p/2": "unchanged", "/p/3": "new"}
