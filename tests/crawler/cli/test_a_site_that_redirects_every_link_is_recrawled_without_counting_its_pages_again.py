"""A recrawl follows a revisit's redirect to the URL the earlier run landed on without
counting that URL against ``--max-pages`` again: the run that first claimed it counted it.
Before, a site whose every link redirects (a missing trailing slash, http to https)
counted each of its pages once more at every recrawl, until the bound refused the new
pages a later run found, and they were missing from ``crawlog changes``."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import Route, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio
PAGES = 6
BOUND = 16
"""The home page, each page's task and its redirect's target (13), and room for one
more page (its task and its target) with one to spare: less than one run's worth again."""
RECRAWLS_BEFORE = 3


def home(pages: int) -> Route:
    links = "".join(f'<a href="/p/{n}">page {n}</a>\n' for n in range(1, pages + 1))
    return Route(f"<!DOCTYPE html>\n<title>home</title>\n{links}".encode())


def page_routes(n: int) -> dict[str, Route]:
    """``/p/N`` moved for good to ``/p/N/``, which answers the page."""
    return {
        f"/p/{n}": Route(b"moved", status=301, headers=(("Location", f"/p/{n}/"),)),
        f"/p/{n}/": Route(f"<!DOCTYPE html>\n<title>page {n}</title>\n".encode()),
    }


async def test_a_page_added_after_many_recrawls_is_crawled_and_listed_new(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    where = ("--job", job)
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {"/": home(PAGES)}
    for n in range(1, PAGES + 1):
        routes |= page_routes(n)
    async with serve_hostile(routes) as site:
        await run("crawl", site.url + "/", *where, "--max-pages", str(BOUND), "--workers", "1")
        assert all(f"/p/{n}/" in site.requests for n in range(1, PAGES + 1)), site.requests
        for _ in range(RECRAWLS_BEFORE):
            said = await run("recrawl", *where, "--workers", "1")
            assert "bound reached" not in said, said
        added = PAGES + 1
        site.routes |= page_routes(added)
        site.routes["/"] = home(added)
        said = await run("recrawl", *where, "--workers", "1")
        changes = await run("changes", *where, "--format", "jsonl")

    assert f"/p/{added}/" in site.requests, (said, site.requests)
    assert "bound reached" not in said, said
    new = {
        row["url"].removeprefix(site.url) for row in map(json.loads, changes.splitlines())
        if row["change"] == "new"
    }  # fmt: skip
    assert new & {f"/p/{added}", f"/p/{added}/"}, changes
