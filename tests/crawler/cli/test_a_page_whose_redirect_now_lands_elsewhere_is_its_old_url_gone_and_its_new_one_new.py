"""A revisit whose page is now at another URL (it redirects somewhere no task of the run
fetches: a renamed slug) lists the move as its old URL ``gone`` and its new one ``new``, as
its items are (the old page's removed, the new one's added), and asks the new URL without
the old page's validators. A redirect that still lands where it did is no change. Before,
the move was listed as a ``changed`` page at a URL the job never had, and the validators
went to the new URL, whose 304 (the same content) would have kept the old page's items."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import Route, html_page, redirect_to, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio
SAME = (("ETag", '"same"'),)


def page(text: str, *links: str) -> Route:
    return html_page(text, *links, headers=SAME)


async def test_a_moved_page_is_its_old_url_gone_and_its_new_one_new_once(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {
        "/": page("home", "/item-old", "/p"),
        "/item-old": page("item"),
        "/p": redirect_to("/p/"),
        "/p/": page("p"),
    }

    async def changes(*args: str) -> dict[str, str]:
        out = await run("changes", "--job", job, "--format", "jsonl", *args)
        return {
            row.get("key", row["url"]).removeprefix(site.url): row["change"]
            for row in map(json.loads, out.splitlines())
        }

    async with serve_hostile(routes) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0")
        site.routes["/item-old"] = redirect_to("/item-new")
        site.routes["/item-new"] = page("item")  # the same content, the same ETag
        before = len(site.heads)
        await run("recrawl", *where)
        asked = site.heads[before:]
        second, second_items = await changes("--run", "2"), await changes("--run", "2", "--items")
        await run("recrawl", *where)
        third = await changes("--run", "3", "--all")

    assert second == {"/item-old": "gone", "/item-new": "new"}, second
    assert second_items == {"/item-old": "removed", "/item-new": "added"}, second_items
    new = next(head for head in asked if head.startswith("GET /item-new "))
    assert "if-none-match" not in new.lower(), new
    # The next run finds it where it is now, and the slash redirect where it always was.
    assert third == {"/": "unchanged", "/item-new": "unchanged", "/p/": "unchanged"}, third
