"""What Scrapy's downloader middlewares hand back in place of a request is told apart by
its fingerprint: a retry (RetryMiddleware, after a 500) is the same task's next attempt,
logged as ``RetryScheduled`` with its reason, not a new task; a redirect (RedirectMiddleware)
is another page, a task of its own, and the redirected request's task ends done."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from crawler.testsite import MOVED_PREFIX, Faults, RunningSite, serve_testsite
from projector import Store, read_committed
from projector._state import TaskState
from tests.crawler.conftest import replay_verify, run_projector
from tests.crawler.scrapy.conftest import SCRAPY_PAGES

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(180)]
ERRORS = Faults(error_500_rate=0.2, error_500_times=1)
REDIRECTS = Faults(redirects=True)


@pytest.fixture(params=[ERRORS, REDIRECTS], ids=["500 once", "redirects"])
async def scrapy_site(request: pytest.FixtureRequest) -> AsyncIterator[RunningSite]:
    """The site with some pages answering 500 once, or with links that redirect."""
    async with serve_testsite(pages=SCRAPY_PAGES, seed=3, faults=request.param) as running:
        yield running


async def crawled(
    site: RunningSite, start: Callable[..., Any], valkey_url: str, job: str, data_dir: Path
) -> dict[str, TaskState]:
    """The job's tasks by path, once Scrapy crawled the whole site; one task per page."""
    with anyio.fail_after(150):
        process = await start()
        assert await process.wait() == 0
        await run_projector(valkey_url, job, data_dir)
    _, state = read_committed(Store(data_dir, job))
    by_path = {t.url.removeprefix(site.url): t for t in state.tasks.values()}
    assert len(by_path) == len(state.tasks), "one task per page"
    assert b"identical" in await replay_verify(valkey_url, job, data_dir)
    return by_path


async def test_a_retry_is_the_same_task_s_next_attempt_and_a_redirect_a_task_of_its_own(
    scrapy_site: RunningSite,
    scrapy_process: Callable[..., Any],
    job: str,
    valkey_url: str,
    data_dir: Path,
) -> None:
    site = scrapy_site
    tasks = await crawled(site, scrapy_process, valkey_url, job, data_dir)
    failed_once = {r.path for r in site.requests if r.status == 500}
    moved = {r.path for r in site.requests if r.path.startswith(MOVED_PREFIX)}
    assert failed_once or moved, "the site's faults were met"
    for path in failed_once:
        task = tasks[path]
        assert (task.status, task.attempt, task.retries) == ("done", 2, 1), (path, task)
        assert task.last_reason == "HTTP 200"
    for path in moved:
        assert tasks[path].status == "done"
        assert "redirect" in tasks[path].last_reason
    reachable = {url.removeprefix(site.url) for url in site.reachable}
    assert {p for p, t in tasks.items() if t.status == "done"} >= reachable
