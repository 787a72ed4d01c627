"""``crawlog recrawl`` of a ``--browser`` job: each page's document is asked for with the
validators its last fetch left; a 304 ends the page unchanged without rendering it, and a
changed page is rendered as in the first run, its scripts' links followed. Before, Chromium
aborted every navigation the site answered 304 (it has no copy to show): each unchanged
page failed as a connection error, was retried, opened the site's circuit, and the run
never ended."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from crawler.testsite import RunningSite
from tests.crawler.operator_cli import crawlog_ok

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]
EDITED = ("/", "/list?page=2")
"""The home page and a listing: pages whose links only scripts write."""


async def test_unchanged_pages_are_304s_and_the_changed_ones_are_rendered_again(
    chromium: str, scripted_site: RunningSite, valkey_url: str, data_dir: Path, job: str
) -> None:
    site = scripted_site
    run = partial(crawlog_ok, valkey_url, data_dir)
    where = ("--job", job, "--workers", "1")
    await run("crawl", site.url + "/", *where, "--browser")
    first = len(site.requests)
    reached = {r.path for r in site.requests if r.path != "/robots.txt"}
    assert set(EDITED) <= reached
    site.edit(*EDITED)
    said = await run("recrawl", *where)
    listed = await run("changes", "--job", job, "--format", "jsonl")
    report = await run("report", "--job", job)

    assert "finished run 2" in said, said
    rows = [json.loads(line) for line in listed.splitlines()]
    assert sorted((r["url"].removeprefix(site.url), r["change"]) for r in rows) == sorted(
        (path, "changed") for path in EDITED
    )
    again = [r for r in site.requests[first:] if r.path != "/robots.txt"]
    assert {r.path for r in again} == reached, "every page asked for once more"
    assert {r.path for r in again if r.status == 200} == set(EDITED), "only they in full"
    assert all(r.status == 304 for r in again if r.path not in EDITED)
    assert "failed    0" in report, report
