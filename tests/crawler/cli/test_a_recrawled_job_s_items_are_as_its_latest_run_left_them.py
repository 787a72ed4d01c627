"""A recrawled job's items (the ``items`` view, ``crawlog export --what items``) are as its
latest run left them: a changed item's data now, a removed one (its page gone) left out.
Before, they were each key's first scrape: after daily recrawls, an export still had the
first day's prices and every page ever removed."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import html_page, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio


async def test_a_changed_item_is_its_latest_data_and_a_removed_one_is_left_out(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {"/": html_page("home", "/a", "/b"), "/a": html_page("price 1"), "/b": html_page("b")}
    async with serve_hostile(routes) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0")
        first = await run("export", "--job", job, "--what", "items", "--format", "jsonl", "-")
        site.routes["/a"] = html_page("price 2")
        del site.routes["/b"]  # 404 from now on
        await run("recrawl", *where)
        exported = await run("export", "--job", job, "--what", "items", "--format", "jsonl", "-")
        queried = await run("sql", "--job", job, "SELECT url, content_hash FROM items ORDER BY url")
        changes = await run("changes", "--job", job, "--items", "--format", "jsonl")

    before = {r["url"]: r["content_hash"] for r in map(json.loads, first.splitlines())}
    now = {r["url"]: r["content_hash"] for r in map(json.loads, exported.splitlines())}
    assert set(before) == {site.url + p for p in ("/", "/a", "/b")}
    assert set(now) == {site.url + "/", site.url + "/a"}, now
    assert now[site.url + "/a"] != before[site.url + "/a"]
    # The data now is the changed item's data in the run's changes.
    changed = {r["key"]: r for r in map(json.loads, changes.splitlines())}
    assert changed[site.url + "/a"]["data"]["content_hash"] == now[site.url + "/a"]
    assert changed[site.url + "/b"]["change"] == "removed"
    assert now[site.url + "/a"] in queried and before[site.url + "/b"] not in queried, queried
