"""In a real browser: the Tasks page lists the job's tasks before any search, a page at a
time (a full first page, a pager to the rest), and its filters by status, site and
failure reason list exactly the tasks the log says have them."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler.console._task_index import PAGE_SIZE
from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskEnqueued, TaskFailed
from tests.crawler.console.conftest import RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(150)]
GONE = 3


async def _rows(page: Any) -> int:
    return int(await page.locator("#tasks tbody tr").count())


async def test_the_tasks_page_pages_and_filters_the_job_s_tasks(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=70, seed=1) as site:
        gone = [f"{site.url}/gone/{n}" for n in range(GONE)]
        await start_job([site.url + "/", *gone])
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
        events = [e.event for e in await log.read_range()]
        total = sum(isinstance(e, TaskEnqueued) for e in events)
        failed = {e.task_id for e in events if isinstance(e, TaskFailed)}
        assert total > PAGE_SIZE and len(failed) == GONE
        with anyio.fail_after(60):
            running = await console()
            page = await browser.new_page()
            await page.goto(running.url)
            await page.goto(f"{running.base}/jobs/{job}/tasks")
            # Listed before any search: a full page, and the range of the whole list.
            assert await _rows(page) == PAGE_SIZE
            said = await page.inner_text("#page-range")
            assert said == f"tasks 1\N{EN DASH}{PAGE_SIZE} of {total}", said
            await screenshot(page, "tasks-first-page")
            await page.locator("#pager a.next").click()
            await page.wait_for_selector("#pager a.prev")
            assert await _rows(page) == total - PAGE_SIZE
            assert await page.locator("#pager a.next").count() == 0

            # The filters: failed tasks, then their reason, then a site with none of them.
            await page.select_option("#task-filters select[name=status]", "failed")
            await page.locator("#task-filters button").click()
            await page.wait_for_url(re.compile(r"status=failed"))
            listed = await page.locator("#tasks tbody tr td:first-child").all_inner_texts()
            assert set(listed) == failed
            reasons = await page.locator(
                "#task-filters select[name=reason] option"
            ).all_inner_texts()
            assert f"HTTP 404 ({GONE})" in reasons, reasons
            await page.select_option("#task-filters select[name=reason]", "HTTP 404")
            await page.locator("#task-filters button").click()
            await page.wait_for_url(re.compile(r"reason=HTTP"))
            assert await _rows(page) == GONE
            await screenshot(page, "tasks-failed-404")
            await page.goto(f"{running.base}/jobs/{job}/tasks?status=failed&site=http://elsewhere")
            assert await page.inner_text("#page-range") == "No task matches."
