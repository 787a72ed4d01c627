"""``crawlog history URL`` of a job recrawled: the URL's task in each run, each with its own
events and verdict. Before, only the first run's task was shown: a later run's fetch of
the URL was listed as a fetch "by another task" in the first run's attempts, and a run whose
revisit was redirected elsewhere was not shown at all."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from crawler._recrawl import run_fingerprint
from crawler._urls import fingerprint
from tests.crawler.hostile_site import Route, html_page, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio


async def test_each_run_s_task_of_the_url_is_shown_with_its_own_fetches_and_verdict(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {"/": html_page("home", "/a", "/b"), "/a": html_page("a"), "/b": html_page("b")}
    async with serve_hostile(routes) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0")
        await run("recrawl", *where)
        site.routes["/a"] = html_page("a, edited")
        site.routes["/b"] = Route(status=301, headers=(("Location", "/c"),))
        site.routes["/c"] = html_page("c")
        await run("recrawl", *where)
        shown = await run("history", "--job", job, site.url + "/a")
        moved = await run("history", "--job", job, site.url + "/b")
        as_json = json.loads(await run("history", "--job", job, site.url + "/a", "--json"))

    first = fingerprint(site.url + "/a")
    ids = [first, run_fingerprint(first, 2), run_fingerprint(first, 3)]
    assert shown.startswith(f"{site.url}/a: a task in each of 3 runs"), shown
    blocks = shown.split("\n\nrun ")[1:]
    assert [block.split(":")[0] for block in blocks] == ["1", "2", "3"], shown
    for block, task_id in zip(blocks, ids, strict=True):
        assert f"task {task_id}  {site.url}/a" in block, block
        # One fetch each, its own: no other run's fetch listed "by another task".
        assert "1 fetch attempt(s)" in block and "(task " not in block, block
    assert "HTTP 200, 42 B" in blocks[1] and ", unchanged" in blocks[1], blocks[1]
    assert "HTTP 200" in blocks[2] and ", changed" in blocks[2], blocks[2]
    # The run whose revisit landed elsewhere is shown too.
    assert "a task in each of 3 runs" in moved, moved
    assert [r["task_id"] for r in as_json["runs"]] == ids
    assert [r["run"] for r in as_json["runs"]] == [1, 2, 3]
    assert as_json["task_id"] == first
