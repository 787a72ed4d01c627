"""``crawlog status`` of a recrawled job counts its latest run's tasks, as the recrawl's own
progress does: a page that failed in the first run (a 404, never revisited) is not a
failure of every later run. Before, status counted every run's tasks: after a month of
daily recrawls, "60,000/60,000 tasks ended, 30 failed" for a site of 2,000 pages. A task
of an earlier run not ended (``crawlog retry`` put it back) stays in the count."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest

from tests.crawler.hostile_site import html_page, serve_hostile
from tests.crawler.operator_cli import crawlog_ok

pytestmark = pytest.mark.anyio


async def test_status_counts_the_latest_run_s_tasks_only(
    valkey_url: str, data_dir: Path, job: str
) -> None:
    run = partial(crawlog_ok, valkey_url, data_dir)
    routes = {"/": html_page("home", "/a", "/b"), "/a": html_page("a")}  # /b: 404
    async with serve_hostile(routes) as site:
        where = ("--job", job, "--workers", "1")
        await run("crawl", site.url + "/", *where, "--delay", "0", "--fail-on", "never")
        first = await run("status", "--job", job)
        await run("recrawl", *where)
        second = await run("status", "--job", job)
        as_json = json.loads((await run("status", "--job", job, "--json")).splitlines()[0])
        # The first run's failed page retried: work left is never left out.
        await run("retry", "--job", job, "--failed", "--yes", "--reason", "try again")
        retried = await run("status", "--job", job)

    assert f"progress {job}: 3/3 tasks ended (100.0%)" in first, first
    assert ", 1 failed," in first
    # Run 2 revisits the two pages that were found; the 404 is not asked again.
    assert f"progress {job} run 2: 2/2 tasks ended (100.0%)" in second, second
    assert ", 0 failed," in second
    assert (as_json["total"]["discovered"], as_json["total"]["failed"]) == (2, 0)
    assert f"progress {job} run 2: 2/3 tasks ended (66.7%)" in retried, retried
