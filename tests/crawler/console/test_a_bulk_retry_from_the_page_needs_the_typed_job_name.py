"""In a real browser: "Needs a person" groups failed tasks by reason; "Retry all N" is
refused until the operator types the job name, and then retries exactly those N, once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from crawler.testsite import serve_testsite
from eventlog import EventLog, TaskRetried
from tests.crawler.console.conftest import CONSOLE_ACTOR, RunningConsole

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(150)]


async def test_retry_all_is_refused_without_the_job_name_and_retries_the_group_with_it(
    start_job: Callable[..., Any],
    worker_process: Callable[..., Any],
    console: Callable[..., Awaitable[RunningConsole]],
    browser: Any,
    screenshot: Callable[[Any, str], Awaitable[Any]],
    log: EventLog,
    job: str,
) -> None:
    async with serve_testsite(pages=10, seed=1) as site:
        missing = [f"{site.url}/no/such/page/{n}" for n in range(3)]
        await start_job([site.url + "/", *missing], max_depth=0)
        with anyio.fail_after(60):
            assert await (await worker_process("w1", "--exit-when-done")).wait() == 0
            running = await console()
            page = await browser.new_page()
            await page.goto(running.url)
            await page.goto(f"{running.base}/jobs/{job}/attention")
            group = page.locator("section.group")
            assert await group.count() == 1
            assert (await group.locator("h2").inner_text()).startswith("3 failed")
            await screenshot(page, "needs-a-person")

            await group.get_by_placeholder("why run them again").fill("404s fixed")
            await group.get_by_placeholder(f"type {job}").fill("not-the-job")
            await group.get_by_role("button", name="Retry all 3").click()
            await page.wait_for_selector("#flash.refused")
            assert "type the job name" in await page.inner_text("#flash")
            assert [e for e in await log.read_range() if isinstance(e.event, TaskRetried)] == []

            group = page.locator("section.group")
            await group.get_by_placeholder("why run them again").fill("404s fixed")
            await group.get_by_placeholder(f"type {job}").fill(job)
            await group.get_by_role("button", name="Retry all 3").click()
            await page.wait_for_selector("#flash.ok")
            assert "retried 3 task(s)" in await page.inner_text("#flash")
    said = [e.event for e in await log.read_range() if isinstance(e.event, TaskRetried)]
    assert len(said) == 3
    assert {(e.actor, e.reason) for e in said} == {(CONSOLE_ACTOR, "404s fixed")}
