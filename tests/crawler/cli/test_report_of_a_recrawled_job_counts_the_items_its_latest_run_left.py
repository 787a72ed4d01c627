"""``crawlog report`` of a recrawled job counts the items as its latest run left them (what
the ``items`` view lists), not every key any run scraped; a later run's new look at an item
is not one of the duplicates it ignored. Before, after a recrawl that found a page gone and
another changed, the report said ``Items: 3 (1 duplicate ignored)`` where 2 were live."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import html_page, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio


async def test_the_report_counts_live_items_removed_ones_and_new_looks_apart(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {"/": html_page("home", "/a", "/b"), "/a": html_page("price 1"), "/b": html_page("b")}
    async with serve_hostile(routes) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0")
        once = await run("report", "--job", job)
        once_json = json.loads(await run("report", "--job", job, "--json"))
        site.routes["/a"] = html_page("price 2")
        del site.routes["/b"]  # 404 from now on
        await run("recrawl", *where)
        text = await run("report", "--job", job)
        as_json = json.loads(await run("report", "--job", job, "--json"))
        live = await run("sql", "--job", job, "--format", "json", "SELECT count(*) AS n FROM items")

    assert "Items: 3 (0 duplicates ignored)" in once, once
    assert once_json["items_over_runs"] is None
    assert json.loads(live) == [{"n": 2}]
    line = (
        "Items: 2 live after run 2 (3 keys over 2 runs: 1 removed, 1 scraped again by a later "
        "run; 0 duplicates ignored)"
    )
    assert line in text, text
    assert as_json["items_over_runs"] == {"runs": 2, "keys": 3, "live": 2, "scraped_again": 1}
    assert (as_json["totals"]["items"], as_json["totals"]["duplicate_items"]) == (3, 1)
