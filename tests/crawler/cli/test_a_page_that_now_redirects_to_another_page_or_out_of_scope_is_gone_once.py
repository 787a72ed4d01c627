"""A page a recrawl finds redirecting (to a page of the crawl fetched by its own task, or out
of the crawl's scope) is ``gone`` in that run, its items removed; in the runs after, the
redirect it now is has no verdict. A first run's redirect to another task's page is no page
of its own: not listed ``new``. Before, such a page had no verdict at all, its items stayed
live in every later run, and a first run listed the redirect as a new page."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import html_page, redirect_to, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio


async def test_a_page_that_became_a_redirect_is_gone_once_and_loses_its_items(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {
        "/": html_page("home", "/a", "/b", "/c", "/old"),
        "/a": html_page("a"),
        "/b": html_page("b"),
        "/c": html_page("c"),
        "/old": redirect_to("/a"),
    }

    async def changes(*args: str) -> dict[str, str]:
        out = await run("changes", "--job", job, "--format", "jsonl", *args)
        return {
            row.get("url", row.get("key")).removeprefix(site.url): row["change"]
            for row in map(json.loads, out.splitlines())
        }

    async with serve_hostile(routes) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0")
        first = await changes("--run", "1")
        site.routes["/b"] = redirect_to("/a")
        site.routes["/c"] = redirect_to("http://127.0.0.2:9/c")
        await run("recrawl", *where)
        second, second_items = await changes("--run", "2"), await changes("--run", "2", "--items")
        await run("recrawl", *where)
        third, third_items = await changes("--run", "3"), await changes("--run", "3", "--items")

    assert first == {"/": "new", "/a": "new", "/b": "new", "/c": "new"}, first
    assert second == {"/b": "gone", "/c": "gone"}, second
    assert second_items == {"/b": "removed", "/c": "removed"}, second_items
    assert third == {} and third_items == {}, (third, third_items)
