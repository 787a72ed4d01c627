"""A page linked directly and through redirects is fetched once: a redirect whose target
another task has is not followed (the target's task fetches it), and a redirect target
nobody had yet is claimed, so no task is ever enqueued for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import Faults, serve_testsite
from eventlog import EventLog, TaskDone

pytestmark = pytest.mark.anyio


async def test_a_page_reached_by_a_redirect_is_fetched_once(
    start_job: Callable[..., Any], worker_process: Callable[..., Any], log: EventLog
) -> None:
    async with serve_testsite(pages=200, seed=4, faults=Faults(redirects=True)) as site:
        await start_job([site.url + "/"], obey_robots=False)
        with anyio.fail_after(60):
            worker = await worker_process("w1", "--exit-when-done")
            assert await worker.wait() == 0
        site.flush_log()
        fetched = site.fetch_counts()
        redirected_to = {"/item/" + p.rsplit("/", 1)[1] for p in site.sitemap.redirects}
    assert redirected_to & set(fetched), "the site has redirects the crawl followed"
    twice = {path: n for path, n in fetched.items() if n > 1}
    assert twice == {}
    done = [e.event for e in await log.read_range() if isinstance(e.event, TaskDone)]
    handed = [e for e in done if e.reason.endswith("fetched by its own task")]
    assert handed, "some redirects led to pages their own tasks fetched"
