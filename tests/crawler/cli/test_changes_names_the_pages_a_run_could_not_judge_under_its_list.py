"""``crawlog changes`` (a table) names, under its list, the run's pages that got no verdict:
failed by reason, or not ended yet. Before, a run whose revisits failed said "no changes"
and nothing else. Programs' formats (jsonl, csv) stay one row per change."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import Route, html_page, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio


async def test_a_run_whose_revisit_failed_says_so_under_no_changes(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    async with serve_hostile({"/": html_page("home", "/a"), "/a": html_page("a")}) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0")
        site.routes["/a"] = Route(status=302, headers=(("Location", "/a"),))
        await run("recrawl", *where)
        table = await run("changes", "--job", job)
        rows = await run("changes", "--job", job, "--format", "jsonl")

    assert table.splitlines() == [
        f"job {job}, run 2: no changes",
        "not judged: 1 page(s), 1 failed (1 redirect loop); their tasks: "
        f"crawlog report --job {job}",
    ], table
    assert rows == "", rows
